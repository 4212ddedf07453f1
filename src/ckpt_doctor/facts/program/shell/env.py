"""The script's variables as it runs: a persistent environment, cheap to copy per branch."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class _Var:
    value: str | None
    unresolved: tuple[str, ...] = ()
    exported: bool = False
    array: tuple[str, ...] | None = None
    assumed: tuple[str, ...] = ()
    scripted: bool = False  # assigned by the script (not from the container's env)
    partial: str | None = None  # the value as far as it could be expanded, when value is None


_UNSET = _Var(None, ("<unset>",))


class _Env:
    """An immutable map name -> _Var; `set` returns a new one sharing most of the old (O(1) amortised)."""

    __slots__ = ("_base", "_dict", "_over")

    def __init__(self, base: dict[str, _Var], over: dict[str, _Var] | None = None) -> None:
        self._base = base
        self._over = over or {}
        self._dict: dict[str, str | None] | None = None

    def get(self, name: str) -> _Var | None:
        v = self._over.get(name)
        if v is None:
            v = self._base.get(name)
        return None if v is _UNSET else v

    def set(self, name: str, var: _Var) -> _Env:
        over = dict(self._over)
        over[name] = var
        if len(over) > 32 and len(over) * len(over) > len(self._base):  # ~sqrt(size): O(sqrt n) a set
            base = dict(self._base)
            base.update(over)
            return _Env({k: v for k, v in base.items() if v is not _UNSET})
        return _Env(self._base, over)

    def unset(self, name: str) -> _Env:
        if self.get(name) is None:
            return self
        return self.set(name, _UNSET)

    def items(self) -> Iterable[tuple[str, _Var]]:
        seen = set()
        for k, v in self._over.items():
            seen.add(k)
            if v is not _UNSET:
                yield k, v
        for k, v in self._base.items():
            if k not in seen:
                yield k, v

    def as_dict(self) -> dict[str, str | None]:
        if self._dict is None:
            self._dict = {k: (" ".join(v.array) if v.array is not None else v.value) for k, v in self.items()}
        return dict(self._dict)

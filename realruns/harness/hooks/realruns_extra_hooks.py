"""Ground-truth hooks for JAX + Orbax (kept apart from sitecustomize.py; loaded by it when present).

- steps: every call of a `jax.jit`-compiled function whose output holds an optax Adam state reports the
  state's own `count` (restored by a real resume), as torch's optimizer hook does for torch;
- saves: `CheckpointManager.save(step)` that the manager decides to save starts a save; its commit is the
  rename of the temporary folder to the step's folder (an audit event of the process), the end of the save.
"""

from __future__ import annotations

import functools
import os
import sys
import time

from sitecustomize import _SLOW, _state, emit  # type: ignore[import-not-found]

_pending: dict[int, str] = {}


def _adam_count(out: object, depth: int = 0) -> int | None:
    if depth > 6:
        return None
    if type(out).__name__ == "ScaleByAdamState":
        try:
            return int(out.count)  # type: ignore[attr-defined]
        except Exception:
            return None
    if isinstance(out, (tuple, list)):
        for x in out:
            c = _adam_count(x, depth + 1)
            if c is not None:
                return c
    if isinstance(out, dict):
        for x in out.values():
            c = _adam_count(x, depth + 1)
            if c is not None:
                return c
    return None


def patch_jax(jax) -> None:  # type: ignore[no-untyped-def]
    orig_jit = jax.jit

    def jit(fun=None, *a, **k):  # type: ignore[no-untyped-def]
        if fun is None:
            return functools.partial(jit, *a, **k)
        compiled = orig_jit(fun, *a, **k)

        @functools.wraps(fun)
        def call(*args, **kw):  # type: ignore[no-untyped-def]
            out = compiled(*args, **kw)
            c = _adam_count(out)
            if c is not None and c != _state["last_emitted"]:
                _state["step"] = _state["last_emitted"] = c
                emit("step", step=c)
                delay = float(os.environ.get("REALRUNS_STEP_DELAY") or 0)
                if delay:
                    time.sleep(delay)
            return out

        return call

    jax.jit = jit


def patch_orbax(mod) -> None:  # type: ignore[no-untyped-def]
    cls = mod.CheckpointManager
    orig = cls.save

    def save(self, step, *a, **k):  # type: ignore[no-untyped-def]
        force = bool(k.get("force"))
        try:
            will = force or self.should_save(step)
        except Exception:
            will = False
        if will:
            path = os.path.join(str(self.directory), str(step))
            _pending[int(step)] = path
            emit("save_start", framework="orbax", step=int(step), path=path)
        return orig(self, step, *a, **k)

    functools.update_wrapper(save, orig)
    cls.save = save


def _audit(event: str, args: tuple) -> None:  # type: ignore[type-arg]
    if event not in ("os.rename", "os.replace") or not _pending:
        return
    dst = os.fsdecode(args[1]) if isinstance(args[1], (str, bytes, os.PathLike)) else ""
    base = os.path.basename(dst.rstrip("/"))
    if base.isdigit() and int(base) in _pending:
        step = int(base)
        if _SLOW:
            emit("save_file", path=os.fsdecode(args[0]))
            time.sleep(_SLOW)
        emit("save_end", framework="orbax", step=step, path=_pending.pop(step))


if os.environ.get("REALRUNS_TRUTH"):
    sys.addaudithook(_audit)

PATCHES = {"jax": patch_jax, "orbax.checkpoint.checkpoint_manager": patch_orbax}

"""Ground-truth hooks for JAX + Orbax (kept apart from sitecustomize.py; loaded by it when present).

- steps: every call of a `jax.jit`-compiled function whose output holds an optax Adam state reports the
  state's own `count` (restored by a real resume), as torch's optimizer hook does for torch;
- saves: the process creating `<dir>/<step>.orbax-checkpoint-tmp` starts a save, renaming it to `<dir>/<step>`
  commits it (audit events of the process: no wrapper, no call into the manager's own bookkeeping).
"""

from __future__ import annotations

import functools
import os
import re
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


_TMP = re.compile(r"^(\d+)\.orbax-checkpoint-tmp$")


def _audit(event: str, args: tuple) -> None:  # type: ignore[type-arg]
    """An Orbax save creates `<dir>/<step>.orbax-checkpoint-tmp` and commits by renaming it to `<dir>/<step>`."""
    if event not in ("os.mkdir", "os.rename", "os.replace"):
        return
    try:
        src = os.fsdecode(args[0])
    except TypeError:
        return
    m = _TMP.match(os.path.basename(src.rstrip("/")))
    if m is None or ".orbax-checkpoint-tmp" in os.path.dirname(src):
        return
    step = int(m.group(1))
    final = os.path.join(os.path.dirname(src), str(step))
    if event == "os.mkdir":
        _pending[step] = final
        emit("save_start", framework="orbax", step=step, path=final)
        return
    if step in _pending:
        if _SLOW:
            emit("save_file", path=src)
            time.sleep(_SLOW)
        emit("save_end", framework="orbax", step=step, path=_pending.pop(step))


if os.environ.get("REALRUNS_TRUTH"):
    sys.addaudithook(_audit)

PATCHES = {"jax": patch_jax}

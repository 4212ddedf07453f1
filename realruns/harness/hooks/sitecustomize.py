"""Ground truth from inside the trainer process, through a side channel that never reaches its log.

Loaded by every Python process of a recorded run (the harness puts this folder on PYTHONPATH; nothing of
it is in the recorded container env). Events go as JSON lines to the file named by REALRUNS_TRUTH, one
os.write each (O_APPEND), so a SIGKILL loses none that happened:

- proc_start / proc_exit (interpreter exit that ran atexit) / uncaught (an exception that ended it)
- step: the optimizer step after each `Optimizer.step` (torch's global post hook), read from the
  optimizer's own state (Adam's per-parameter `step`, restored on a real resume): a count the program
  keeps, not a number from its log
- save_start / save_file / save_end / save_error around the framework's checkpoint save call
  (HF `Trainer._save_checkpoint`, Lightning `Trainer.save_checkpoint`, accelerate `save_state`,
  `torch.distributed.checkpoint.save`, DeepSpeed `save_checkpoint`, Orbax `CheckpointManager.save`)
- read: a file the process opened for reading on the checkpoint volume before its first step (what it
  resumed from), seen by an audit hook: no wrapper around a load function, whose frame would show in
  the traceback of a crash while loading (save wrappers stay: no recorded save raises)
- sigterm_handler: the program (or its framework) installed a SIGTERM handler

REALRUNS_STEP_DELAY=S adds S seconds to each optimizer step (a tiny CPU model steps in milliseconds; a
real one takes long enough for a fault to land at a chosen step).
REALRUNS_SLOW_SAVE=S makes storage slow during a save: S seconds after each file a save writes (and
before DCP writes `.metadata`), so that a fault can land inside a save, as on a busy network volume.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.abc
import importlib.util
import json
import os
import signal
import sys
import threading
import time

_TRUTH = os.environ.get("REALRUNS_TRUTH")
_SLOW = float(os.environ.get("REALRUNS_SLOW_SAVE") or 0)
_STEP_DELAY = float(os.environ.get("REALRUNS_STEP_DELAY") or 0)  # the compute time of a real step
_state = {"step": None, "save_depth": 0, "load_depth": 0, "last_emitted": None}
_lock = threading.Lock()


def emit(event: str, **kv: object) -> None:
    if not _TRUTH:
        return
    rec = {"event": event, "t": time.time(), "pid": os.getpid(), "rank": _rank(), **kv}
    data = (json.dumps(rec, default=str) + "\n").encode()
    fd = os.open(_TRUTH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _rank() -> int | None:
    for k in ("RANK", "LOCAL_RANK", "JAX_PROCESS_INDEX"):
        v = os.environ.get(k)
        if v is not None and v.isdigit():
            return int(v)
    return None


# -- process ---------------------------------------------------------------------------------------------
if _TRUTH:
    emit("proc_start", argv=sys.argv, ppid=os.getppid())
    atexit.register(lambda: emit("proc_exit", step=_state["step"]))
    _orig_excepthook = sys.excepthook

    def _excepthook(tp, value, tb):  # type: ignore[no-untyped-def]
        emit("uncaught", type=tp.__name__, message=str(value)[:500], step=_state["step"])
        _orig_excepthook(tp, value, tb)

    sys.excepthook = _excepthook
    _orig_signal = signal.signal

    def _signal(signum, handler):  # type: ignore[no-untyped-def]
        if signum == signal.SIGTERM and callable(handler):
            emit("sigterm_handler", handler=getattr(handler, "__qualname__", repr(handler)))
        return _orig_signal(signum, handler)

    signal.signal = _signal

    # what the process reads from the checkpoint volume before its first step is what it resumed from;
    # an audit hook sees every open() without adding a frame to any traceback (a wrapper around a load
    # function would show in the traceback of a crash while loading)
    _CKPT_ROOT = os.environ.get("REALRUNS_CKPT_ROOT", "/mnt/checkpoints")
    _reads = {"n": 0}

    def _audit(event, args):  # type: ignore[no-untyped-def]
        if event != "open" or _state["step"] is not None or _state["save_depth"] or _reads["n"] >= 64:
            return
        path, mode = args[0], args[1]
        flags = args[2] if len(args) > 2 else 0
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str) or not path.startswith(_CKPT_ROOT):
            return
        if isinstance(mode, str):
            if any(c in mode for c in "wax+"):
                return
        elif isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            return
        if os.path.isdir(path):
            return
        _reads["n"] += 1
        emit("read", path=path)

    sys.addaudithook(_audit)


# -- saves and loads -------------------------------------------------------------------------------------
@contextlib.contextmanager
def saving(framework: str, path: object, step: int | None = None):  # type: ignore[no-untyped-def]
    outer = _state["save_depth"] == 0
    _state["save_depth"] += 1
    step = _state["step"] if step is None else step
    if outer:
        emit("save_start", framework=framework, step=step, path=str(path) if path is not None else None)
    try:
        yield
    except BaseException as e:
        if outer:
            emit("save_error", framework=framework, step=step, type=type(e).__name__, message=str(e)[:300])
        raise
    finally:
        _state["save_depth"] -= 1
    if outer:
        emit("save_end", framework=framework, step=step, path=str(path) if path is not None else None)


def _file_written(path: object) -> None:
    if _state["save_depth"] > 0:
        # a path, or an in-memory buffer the framework writes out afterwards (Lightning's atomic save)
        emit("save_file", path=os.fspath(path) if isinstance(path, (str, os.PathLike)) else f"<{type(path).__name__}>")
        if _SLOW:
            time.sleep(_SLOW)


def _wrap_method(cls: type, name: str, make):  # type: ignore[no-untyped-def]
    orig = getattr(cls, name, None)
    if orig is None or getattr(orig, "_realruns", False):
        return
    new = make(orig)
    functools.update_wrapper(new, orig)
    new._realruns = True  # type: ignore[attr-defined]
    setattr(cls, name, new)


# -- per library ----------------------------------------------------------------------------------------
def _opt_step(opt) -> int | None:  # type: ignore[no-untyped-def]
    try:
        for st in opt.state.values():
            s = st.get("step") if isinstance(st, dict) else None
            if s is not None:
                return int(s)
    except Exception:
        return None
    return None


def patch_torch(torch) -> None:  # type: ignore[no-untyped-def]
    counted = {"n": 0}

    def post_hook(opt, args, kwargs):  # type: ignore[no-untyped-def]
        if _state.get("fake_step"):
            return  # DCP's get_state_dict initialises an empty optimizer with a zero-grad step: not training
        step = _opt_step(opt)
        if step is None:
            counted["n"] += 1
            step = counted["n"]
        if step == _state["last_emitted"]:
            return  # a wrapper optimizer and its inner one
        _state["step"] = _state["last_emitted"] = step
        emit("step", step=step)
        if _STEP_DELAY:
            time.sleep(_STEP_DELAY)

    from torch.optim.optimizer import register_optimizer_step_post_hook

    register_optimizer_step_post_hook(post_hook)
    orig_save = torch.save

    def save(obj, f, *a, **k):  # type: ignore[no-untyped-def]
        out = orig_save(obj, f, *a, **k)
        _file_written(f)
        return out

    functools.update_wrapper(save, orig_save)
    torch.save = save


def patch_safetensors(mod) -> None:  # type: ignore[no-untyped-def]
    orig = mod.save_file

    def save_file(tensors, filename, *a, **k):  # type: ignore[no-untyped-def]
        out = orig(tensors, filename, *a, **k)
        _file_written(filename)
        return out

    functools.update_wrapper(save_file, orig)
    mod.save_file = save_file


def patch_hf(mod) -> None:  # type: ignore[no-untyped-def]
    def make_save(orig):  # type: ignore[no-untyped-def]
        def _save_checkpoint(self, model, trial=None, *a, **k):  # type: ignore[no-untyped-def]
            step = self.state.global_step
            try:
                path = os.path.join(self._get_output_dir(trial=trial), f"checkpoint-{step}")
            except Exception:
                path = None
            with saving("hf-trainer", path, step):
                return orig(self, model, trial, *a, **k)

        return _save_checkpoint

    _wrap_method(mod.Trainer, "_save_checkpoint", make_save)


def patch_lightning_trainer(mod) -> None:  # type: ignore[no-untyped-def]
    def make_save(orig):  # type: ignore[no-untyped-def]
        def save_checkpoint(self, filepath, *a, **k):  # type: ignore[no-untyped-def]
            with saving("lightning", filepath, self.global_step):
                return orig(self, filepath, *a, **k)

        return save_checkpoint

    _wrap_method(mod.Trainer, "save_checkpoint", make_save)


def patch_accelerate(mod) -> None:  # type: ignore[no-untyped-def]
    def make_save(orig):  # type: ignore[no-untyped-def]
        def save_state(self, output_dir=None, *a, **k):  # type: ignore[no-untyped-def]
            with saving("accelerate", output_dir):
                return orig(self, output_dir, *a, **k)

        return save_state

    _wrap_method(mod.Accelerator, "save_state", make_save)


def _dcp_path(k: dict) -> object:  # type: ignore[type-arg]
    if k.get("checkpoint_id") is not None:
        return k["checkpoint_id"]
    for key in ("storage_writer", "storage_reader"):
        s = k.get(key)
        if s is not None:
            return getattr(s, "path", None) or getattr(s, "checkpoint_id", None)
    return None


def patch_dcp_saver(mod) -> None:  # type: ignore[no-untyped-def]
    orig = mod.save

    def save(state_dict, *a, **k):  # type: ignore[no-untyped-def]
        with saving("torch-dcp", _dcp_path(k)):
            return orig(state_dict, *a, **k)

    functools.update_wrapper(save, orig)
    mod.save = save


def patch_dcp_state_dict(mod) -> None:  # type: ignore[no-untyped-def]
    orig = getattr(mod, "_init_optim_state", None)
    if orig is None:
        return

    def _init_optim_state(*a, **k):  # type: ignore[no-untyped-def]
        _state["fake_step"] = True
        try:
            return orig(*a, **k)
        finally:
            _state["fake_step"] = False

    functools.update_wrapper(_init_optim_state, orig)
    mod._init_optim_state = _init_optim_state


def patch_dcp_fs(mod) -> None:  # type: ignore[no-untyped-def]
    def make(orig):  # type: ignore[no-untyped-def]
        def finish(self, *a, **k):  # type: ignore[no-untyped-def]
            if _SLOW and _state["save_depth"] > 0:
                emit("save_file", path="(data files written; .metadata next)")
                time.sleep(_SLOW)
            return orig(self, *a, **k)

        return finish

    _wrap_method(mod.FileSystemWriter, "finish", make)


def patch_deepspeed(mod) -> None:  # type: ignore[no-untyped-def]
    def make_save(orig):  # type: ignore[no-untyped-def]
        def save_checkpoint(self, save_dir, tag=None, *a, **k):  # type: ignore[no-untyped-def]
            step = self.global_steps
            path = os.path.join(str(save_dir), str(tag if tag is not None else f"global_step{step}"))
            with saving("deepspeed", path, step):
                return orig(self, save_dir, tag, *a, **k)

        return save_checkpoint

    _wrap_method(mod.DeepSpeedEngine, "save_checkpoint", make_save)


PATCHES = {
    "torch": patch_torch,
    "safetensors.torch": patch_safetensors,
    "transformers.trainer": patch_hf,
    "lightning.pytorch.trainer.trainer": patch_lightning_trainer,
    "accelerate.accelerator": patch_accelerate,
    "torch.distributed.checkpoint.state_dict_saver": patch_dcp_saver,
    "torch.distributed.checkpoint.filesystem": patch_dcp_fs,
    "torch.distributed.checkpoint.state_dict": patch_dcp_state_dict,
    "deepspeed.runtime.engine": patch_deepspeed,
}
try:
    from realruns_extra_hooks import PATCHES as _EXTRA  # jax/orbax hooks, kept apart

    PATCHES.update(_EXTRA)
except ImportError:
    pass


class _PostImport(importlib.abc.MetaPathFinder):
    """Runs PATCHES[name](module) right after the module's own code ran, before anyone imports from it."""

    def __init__(self) -> None:
        self.busy: set[str] = set()

    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name not in PATCHES or name in self.busy:
            return None
        self.busy.add(name)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy.discard(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module

        def exec_module(module):  # type: ignore[no-untyped-def]
            orig_exec(module)
            try:
                PATCHES[name](module)
            except Exception as e:  # a hook must never change the run
                emit("hook_error", module=name, type=type(e).__name__, message=str(e)[:300])

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if _TRUTH:
    sys.meta_path.insert(0, _PostImport())

"""A save's own completion line completes it: only an error between its start and its completion (or the
program saying it skipped the checkpoint as incomplete) makes a save that died (issue 19 §4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckpt_doctor.facts.attempts import Run
from ckpt_doctor.facts.logs import load_signatures, scan_log
from ckpt_doctor.snapshot import LogRef, Obj

SIGS = load_signatures()
# (the line a framework prints as a save starts, the one it prints when the save is complete), step 40
SAVES = {
    "hf+guide": ("Saving model checkpoint to /o/checkpoint-40", "[checkpoint] saved /o/checkpoint-40"),
    "deepspeed": ("[2026-12-02 01:14:33,162] [INFO] [torch_checkpoint_engine.py:21:save] [Torch] Checkpoint "
                  "global_step40 is about to be saved!",
                  "[2026-12-02 01:14:34,001] [INFO] [torch_checkpoint_engine.py:31:commit] [Torch] Checkpoint "
                  "global_step40 is ready now!"),
    "megatron": (" saving checkpoint at iteration      40 to /o",
                 "  successfully saved checkpoint from iteration      40 to /o"),
    "accelerate": ("Saving current state to /o/step_40", "Random states saved in /o/step_40/random_states_0.pkl"),
}  # fmt: skip
ERRORS = {
    "oom": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has 1.02 GiB free.",
    "nccl": "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error",
    "segfault": "Segmentation fault (core dumped)",
}


def _run(tmp_path: Path, lines: list[str], exit_code: int) -> Run:
    p = tmp_path / "node.log"
    p.write_text("\n".join(lines) + "\n")
    log = scan_log(LogRef("pod-0", "node", False, path=p), SIGS)
    return Run(Obj({"kind": "Pod", "metadata": {"name": "pod-0"}}), "node", False, 0, 0, exit_code=exit_code, log=log)


@pytest.mark.parametrize("err", ERRORS)
@pytest.mark.parametrize("fw", SAVES)
def test_an_error_after_the_completion_line_is_no_dead_save(tmp_path: Path, fw: str, err: str) -> None:
    start, done = SAVES[fw]
    run = _run(tmp_path, [start, done, "Traceback (most recent call last):", ERRORS[err]], 1)
    assert {e.step for e in run.saves()} == {40} and not run.died_saves()


@pytest.mark.parametrize("err", ERRORS)
@pytest.mark.parametrize("fw", SAVES)
def test_an_error_between_start_and_completion_is_a_dead_save(tmp_path: Path, fw: str, err: str) -> None:
    start, _done = SAVES[fw]
    run = _run(tmp_path, [start, "Traceback (most recent call last):", ERRORS[err]], 1)
    assert not run.saves() and [e.step for e in run.died_saves()] == [40]

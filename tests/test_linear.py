"""The diagnosis is linear in pods: counted, not timed (issue 23).

A counting fake stands in for the two collections every per-pod query used to walk whole: the runs of each
attempt (`Attempt.runs`) and the snapshot's logs (`Snapshot.logs`). Each counts the elements its walks
visit. Four times the pods must cost about four times the visits: a query that walks every run or every
log once per pod (History.attempt_start per ended run, Snapshot.logs_of per pod) makes it sixteen.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import ckpt_doctor.facts.attempts as attempts_mod
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources import bundle as bundle_mod
from tests.scenario import Attempt, Scenario

WALKED = {"runs": 0, "logs": 0}


class CountingList(list):
    def __iter__(self) -> Any:
        WALKED["runs"] += len(self)
        return super().__iter__()


class CountingDict(dict):
    def __iter__(self) -> Any:
        WALKED["logs"] += len(self)
        return super().__iter__()

    def keys(self) -> Any:
        WALKED["logs"] += len(self)
        return super().keys()

    def items(self) -> Any:
        WALKED["logs"] += len(self)
        return super().items()

    def values(self) -> Any:
        WALKED["logs"] += len(self)
        return super().values()


@dataclasses.dataclass
class CountingAttempt(attempts_mod.Attempt):
    def __post_init__(self) -> None:
        self.runs = CountingList(self.runs)


LOG = (
    "[checkpoint] no prior checkpoint, starting fresh\n{'loss': 1.8, 'epoch': 0.1}\n"
    " 10%|#| 10/100 [00:10<01:30, 1.0it/s]\n"
)


def _bundle(root: Path, pods: int) -> Path:
    """A TrainJob after one JobSet restart: `pods` trainer pods per attempt, a log for every pod."""
    s = Scenario(name="big-run", num_nodes=pods)
    s.js_restarts = 1
    s.attempts = [
        Attempt(0, "gpu-node-0", None, pods=pods, started=0, phase="Failed", exit_code=1),
        Attempt(1, "gpu-node-1", None, pods=pods, started=60),
    ]
    s.write(root)
    for names in s.pod_names():
        for pod in names:
            d = root / "logs" / pod
            d.mkdir(parents=True, exist_ok=True)
            (d / "node.log").write_text(LOG)
    return root


def _walks(root: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    real_snapshot = bundle_mod.Snapshot

    def counting_snapshot(*a: Any, **kw: Any) -> Any:
        snap = real_snapshot(*a, **kw)
        snap.logs = CountingDict()
        return snap

    monkeypatch.setattr(bundle_mod, "Snapshot", counting_snapshot)
    monkeypatch.setattr(attempts_mod, "Attempt", CountingAttempt)
    for k in WALKED:
        WALKED[k] = 0
    snap = bundle_mod.load_bundle(root)
    diag = diagnose_snapshot(snap)
    assert diag.findings, "the diagnosis ran"
    return dict(WALKED)


def test_walks_grow_linearly_with_pods(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = _walks(_bundle(tmp_path / "small", 16), monkeypatch)
    big = _walks(_bundle(tmp_path / "big", 64), monkeypatch)
    for what in WALKED:
        assert small[what] > 0, what
        # x4 pods: a linear count grows x4 (a little more for fixed costs); a walk per pod would make it x16
        assert big[what] <= 5 * small[what], (what, small[what], big[what])

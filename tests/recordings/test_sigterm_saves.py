"""The save a SIGTERM handler makes (issue 19 §4): its own line, `[checkpoint] SIGTERM: saving at step 25`
(Lightning), `[checkpoint] saved global step 25` (DeepSpeed), `saved step 25, exiting` (Orbax), is a save of that
step, complete when the program then exits on its own, and final-checkpoint-missing passes on it; the same bundle
with the attempt killed instead (exit 137) does not count the announced save and never passes. A run stopped
without a handler whose last printed step is only a lower bound never passes either."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from ckpt_doctor.facts.timeline import timeline_of
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import OUT, all_runs, bundle_id, kill_first_container, models_for

RULE = "final-checkpoint-missing"
# the handler ran (a trainer that is PID 1 without one ignores SIGTERM: accelerate-1.15-sigterm-handler)
HANDLER = [r for r in all_runs() if r["scenario"] == "sigterm-handler" and r["attempts"][0]["ended_by"] == "terminated"]
NO_HANDLER = [r for r in all_runs() if r["scenario"] == "sigterm-no-handler"]


def _diag(bundle: Path) -> tuple[Any, dict[str, str]]:
    with open_bundle(bundle) as snap:
        d = diagnose_snapshot(snap)
    return timeline_of(d.facts), {f["rule"]: f["status"] for f in d.to_json()["findings"]}


@pytest.mark.parametrize("run", HANDLER, ids=[r["id"] for r in HANDLER])
def test_the_handlers_save_is_read_and_the_rule_passes(run: dict[str, Any]) -> None:
    assert RULE in run["verdict"]["pass"]
    tl, st = _diag(OUT / bundle_id(run, "jobset-kept"))
    step = run["attempts"][0]["steps"]["last"]
    assert step in run["attempts"][0]["saves_complete"]
    assert step in {s.step for s in tl.attempts[0].saves}
    assert st[RULE] == "pass"


def _killed(run: dict[str, Any], tmp_path: Path) -> Path:
    """The same bundle, the first attempt's container killed (137) rather than exiting on its own."""
    d = tmp_path / "b"
    shutil.copytree(OUT / bundle_id(run, "jobset-kept"), d)
    kill_first_container(d)
    return d


ANNOUNCED = [r for r in HANDLER if r["framework"] == "lightning"]  # a save announced before its write


@pytest.mark.parametrize("run", ANNOUNCED, ids=[r["id"] for r in ANNOUNCED])
def test_killed_instead_the_announced_save_is_not_complete(run: dict[str, Any], tmp_path: Path) -> None:
    tl, st = _diag(_killed(run, tmp_path))
    assert run["attempts"][0]["steps"]["last"] not in {s.step for s in tl.attempts[0].saves if s.source == "log"}
    assert st[RULE] != "pass"


@pytest.mark.parametrize(("run", "model"), [(r, m) for r in NO_HANDLER for m in models_for(r)],
                         ids=[bundle_id(r, m) for r in NO_HANDLER for m in models_for(r)])  # fmt: skip
def test_without_a_handler_the_rule_never_passes(run: dict[str, Any], model: str) -> None:
    _tl, st = _diag(OUT / bundle_id(run, model))
    lost = any(a["steps"] and b["resumed_from"] is not None and a["steps"]["last"] > b["resumed_from"]
               for a, b in zip(run["attempts"], run["attempts"][1:], strict=False))  # fmt: skip
    if lost:
        assert st.get(RULE) != "pass"

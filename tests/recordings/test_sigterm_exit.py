"""How a program exits after SIGTERM, read from its source (rule sigterm-exit-zero), against what the recorded
program did: every recorded attempt that SIGTERM stopped and that exited on its own (not SIGKILLed at the end of
its grace period) exited as its source says it would. Programs started by torchrun are judged by the agent's
exit (1, whatever the workers return: tests/test_history_endings.py), so only programs that are the container's
own process are compared here."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from ckpt_doctor.facts.program.python import read_python
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import OUT, all_runs, bundle_id
from tests.recordings.judge import ROOT

STOPPED = [
    (r, a)
    for r in all_runs()
    if r["command"][0] == "python"
    for a in r["attempts"][:1]
    if (a.get("fault") or {}).get("signal") == "SIGTERM" and a["ended_by"] == "terminated"
]


def test_there_are_programs_that_exited_after_sigterm_to_compare() -> None:
    frameworks = {r["framework"] for r, _a in STOPPED}
    assert len(STOPPED) >= 6 and {"lightning", "hf-trainer"} <= frameworks, frameworks


@pytest.mark.parametrize(("run", "attempt"), STOPPED, ids=[r["id"] for r, _a in STOPPED])
def test_the_source_says_how_the_program_exited_after_sigterm(run: dict[str, Any], attempt: dict[str, Any]) -> None:
    src = (ROOT / "recordings" / run["id"] / run["script"]).read_text()
    end = read_python(src).sigterm_end
    said = None if end is None else end.exit
    assert said == ("zero" if attempt["exit_code"] == 0 else "nonzero"), (attempt["exit_code"], end)


def test_lightning_without_a_handler_of_its_own_is_read_as_exiting_zero() -> None:
    """The first takes were SIGKILLed at the end of their 5 s grace period; the second takes finished Lightning's
    teardown inside it and exited 0: the source reads the same in both."""
    runs = [r for r in all_runs() if r["framework"] == "lightning" and r["scenario"] == "sigterm-no-handler"]
    assert {a["exit_code"] for r in runs for a in r["attempts"][:1]} == {0, 137}
    for r in runs:
        end = read_python((ROOT / "recordings" / r["id"] / r["script"]).read_text()).sigterm_end
        assert end is not None and end.exit == "zero", (r["id"], end)


# the container's own process (under torchrun the agent's exit 1 is known from the command alone)
KILLED = [r for r in all_runs() if r["command"][0] == "python"
          and any((a.get("fault") or {}).get("signal") == "SIGTERM" for a in r["attempts"])
          and {a["exit_code"] for a in r["attempts"] if (a.get("fault") or {}).get("signal") == "SIGTERM"} == {137}]


@pytest.mark.parametrize("run", KILLED, ids=[r["id"] for r in KILLED])
def test_a_run_sigkilled_after_sigterm_does_not_show_how_the_program_exits(run: dict[str, Any], tmp_path: Path) -> None:
    """SIGKILL at the end of the grace period (137) cut the program short: without its source, sigterm-exit-zero
    is unknown, never a pass (the Lightning runs exited 0 when teardown ended in time)."""
    bundle = tmp_path / "b"
    shutil.copytree(OUT / bundle_id(run, "jobset-kept"), bundle)
    (bundle / "configmaps.yaml").unlink(missing_ok=True)  # the program is gone
    with open_bundle(bundle) as snap:
        found = [f for f in diagnose_snapshot(snap).findings if f.rule.id == "sigterm-exit-zero"]
    assert found and all(f.status != "pass" for f in found), [(f.status, f.result.reason) for f in found]


def test_an_exit_of_its_own_after_sigterm_still_passes_without_the_source(tmp_path: Path) -> None:
    run = next(r for r in all_runs() if r["id"] == "dcp-1rank-sigterm-no-handler")  # torchrun's agent: exit 1
    bundle = tmp_path / "b"
    shutil.copytree(OUT / bundle_id(run, "jobset-kept"), bundle)
    (bundle / "configmaps.yaml").unlink(missing_ok=True)
    with open_bundle(bundle) as snap:
        found = [f for f in diagnose_snapshot(snap).findings if f.rule.id == "sigterm-exit-zero"]
    assert [f.status for f in found] == ["pass"], [(f.status, f.result.reason) for f in found]

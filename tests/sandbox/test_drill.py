"""The verify drill end to end against the sandbox, for every preloaded scenario: the verdict and the failing step
its table promises, the rules the failing step's diagnosis names; on the healthy job every step passes and the
interruptions really happened (the simulated kubelet's record of every trainer start says so)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ckpt_doctor.sandbox.cluster import Sandbox
from ckpt_doctor.sandbox.scenarios import SCENARIOS, ScenarioSpec
from tests.clirun import run_cli
from tests.drill.conftest import ROOT

SCHEMA = json.loads((ROOT / "docs" / "drill.schema.json").read_text())


def drill(sb: Sandbox, name: str, playbook: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    got = run_cli(["drill", f"{sb.namespace}/{name}", "--yes", "-o", "json", "--kubeconfig", str(sb.kubeconfig),
                   "--playbook", str(playbook), *extra])
    doc = got.json()
    jsonschema.validate(doc, SCHEMA)
    assert "Traceback" not in got.err, got.err
    return got.rc, doc, got.err


@pytest.mark.parametrize("spec", SCENARIOS, ids=lambda s: s.name)
def test_the_drill_reaches_the_scenarios_verdict(sandbox: Sandbox, playbook: Path, spec: ScenarioSpec) -> None:
    before = sandbox.api.get("trainjobs", sandbox.namespace, spec.name)
    rc, doc, err = drill(sandbox, spec.name, playbook)
    assert (doc["verdict"], doc["failedStep"]) == (spec.verdict, spec.failing_step), err
    assert rc == (0 if spec.verdict == "passed" else 1)
    assert doc["cluster"]["simulated"] is True and "sandbox (simulated cluster)" in err
    assert doc["steps"][-1]["status"] == "passed"  # cleanup, and the TrainJob is as it was
    after = sandbox.api.get("trainjobs", sandbox.namespace, spec.name)
    assert after["spec"] == before["spec"]
    assert (after["metadata"].get("annotations") or {}) == (before["metadata"].get("annotations") or {})
    if spec.failing_step is not None:
        step = next(s for s in doc["steps"] if s["id"] == spec.failing_step)
        named = {f["rule"] for f in (step.get("diagnosis") or {}).get("findings") or []}
        assert set(spec.rules) <= named, step


def test_the_healthy_job_passes_with_every_interruption_really_run(sandbox: Sandbox, playbook: Path) -> None:
    assert sandbox.sim is not None
    name = "healthy-resume"
    started = len([s for s in sandbox.sim.starts if s[0].startswith(name)])
    rc, doc, err = drill(sandbox, name, playbook)
    assert (rc, doc["verdict"]) == (0, "passed"), err
    assert {s["id"]: s["status"] for s in doc["steps"]} == dict.fromkeys(
        ("preflight", "submit", "first-checkpoint", "crash", "suspend-resume", "cross-node", "cleanup"), "passed")
    # the simulated kubelet's own record: three more trainer starts (crash, resume, move), each resumed from a
    # checkpoint, the last one on the other node
    starts = [s for s in sandbox.sim.starts if s[0].startswith(name)][started:]
    assert len(starts) >= 3 and all(how.step is not None for _pod, _ra, how in starts), starts
    by = {s["id"]: s for s in doc["steps"]}
    assert "resumed from step" in by["crash"]["observed"]
    if sandbox.spoken[name] == "the guide's [checkpoint] convention":  # its save lines are in the log
        assert "after a final save on SIGTERM" in by["suspend-resume"]["observed"]
    assert "moved from" in by["cross-node"]["observed"]
    # the Multi-Attach wait is said exactly when the simulated attach-detach controller made the moved pod wait:
    # on a loaded machine the volume may be released before the drill's new pod reaches it
    moved = {e["object"].rsplit("/", 1)[-1] for e in by["cross-node"]["evidence"] if e.get("path") == "spec.nodeName"}
    waited = any(e.get("reason") == "FailedAttachVolume" and "Multi-Attach" in str(e.get("message"))
                 and (e.get("involvedObject") or {}).get("name") in moved
                 for e in sandbox.api.objects("events", sandbox.namespace))
    assert ("Multi-Attach" in by["cross-node"]["observed"]) == waited, (by["cross-node"], moved)

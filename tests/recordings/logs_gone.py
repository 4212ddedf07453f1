"""Recording bundles with every earlier attempt's log removed and the TrainJob's own progress report added
(issue 21, done-when: "a bundle whose earlier attempt's logs are all gone but whose listing and trainerStatus
remain still gets the right verdict").

From each jobset-kept bundle (every pod kept, so the verdict is known exactly) this keeps the pods, the events
and the checkpoint listings, deletes the logs of every pod but the last attempt's, and writes
`status.trainerStatus` as the Trainer's status server would hold it after the last attempt: the percentage of
the total the run reached, updated when the last attempt ended.

    python -m tests.recordings.logs_gone      # prints each bundle's rules that went wrong
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import OUT, load_run
from tests.recordings.judge import ROOT

RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"


def candidates() -> list[str]:
    """jobset-kept bundles of runs with more than one attempt."""
    out = []
    for b in sorted(OUT.iterdir()):
        if not b.name.endswith("--jobset-kept"):
            continue
        run = load_run(ROOT / "recordings" / _meta(b)["run"])
        if len(run["attempts"]) > 1:
            out.append(b.name)
    return out


def _meta(bundle: Path) -> dict[str, Any]:
    return yaml.safe_load((bundle / "bundle.yaml").read_text())["recording"]


def strip(bundle: Path, dst: Path) -> Path:
    """A copy of `bundle` at `dst` without the earlier attempts' logs, with a trainerStatus from the truth."""
    shutil.copytree(bundle, dst)
    run = load_run(ROOT / "recordings" / _meta(bundle)["run"])
    pods = list(yaml.safe_load_all((dst / "pods.yaml").read_text()))
    items = [p for doc in pods if doc for p in (doc.get("items") or [doc])]
    attempt = {p["metadata"]["name"]: int(p["metadata"]["labels"].get(RESTART_ATTEMPT, 0)) for p in items}
    last = max(attempt.values())
    for name, n in attempt.items():
        if n < last and (dst / "logs" / name).exists():
            shutil.rmtree(dst / "logs" / name)
    truth = run["attempts"]
    reached = [a["steps"]["last"] for a in truth if a["steps"]]
    total = max(reached) if truth[-1]["ended_by"] == "completed" and reached else None
    tj_path = dst / "trainjob.yaml"
    tj = yaml.safe_load(tj_path.read_text())
    end = truth[-1]["steps"]["last"] if truth[-1]["steps"] else 0
    pct = 100.0 if total is None or total == 0 else round(100.0 * end / total, 1)
    tj.setdefault("status", {})["trainerStatus"] = {
        "progressPercentage": pct,
        "estimatedRemainingSeconds": 0,
        "metrics": [{"name": "global_step", "value": str(end)}],
        "lastUpdatedTime": truth[-1]["ended"][:19] + "Z",
    }
    tj_path.write_text(yaml.safe_dump(tj, sort_keys=False))
    return dst


def wrong(bundle: Path) -> list[str]:
    """The run's verdict against the stripped bundle's findings: a rule that must fail and does not, or one
    that must pass and fails (not_evaluated is allowed there: the earlier logs are gone)."""
    run = load_run(ROOT / "recordings" / _meta(bundle)["run"])
    with open_bundle(bundle) as snap:
        diag = diagnose_snapshot(snap)
    status: dict[str, str] = {}
    order = {"fail": 0, "not_evaluated": 1, "pass": 2}
    for f in diag.findings:
        if f.rule.id not in status or order[f.status] < order[status[f.rule.id]]:
            status[f.rule.id] = f.status
    out = [f"{r}:{status.get(r, 'absent')}-not-fail" for r in run["verdict"]["fail"] if status.get(r) != "fail"]
    out += [f"{r}:fail-not-pass" for r in run["verdict"]["pass"] if status.get(r) == "fail"]
    return out


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name in candidates():
            got = wrong(strip(OUT / name, Path(tmp) / name))
            print(f"{name}: {', '.join(got) or 'right'}")


if __name__ == "__main__":
    main()

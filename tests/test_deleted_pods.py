"""Runs known only from the logs of deleted pods get the restart attempt they most likely had,
and a doubt about their place never turns into a failing finding."""

from __future__ import annotations

import shutil
from pathlib import Path

from ruamel.yaml import YAML

from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle

ROOT = Path(__file__).resolve().parents[1]


def _drop_pod(bundle: Path, name: str) -> None:
    y = YAML(typ="safe")
    path = bundle / "pods.yaml"
    doc = y.load(path.read_text())
    doc["items"] = [p for p in doc["items"] if p["metadata"]["name"] != name]
    with path.open("w") as f:
        y.dump(doc, f)


def test_two_deleted_pods_before_one_kept_attempt_do_not_make_a_fresh_start_after_restart(tmp_path: Path) -> None:
    """healthy-resume: attempt 0 (fresh) and attempt 1 (resumed). Attempt 0's pod is gone but its
    log stayed, and a second log of a deleted pod of the same index is there too (an earlier pod
    of attempt 1, replaced on a suspend): the fresh start belongs to attempt 0, not to attempt 1."""
    bundle = tmp_path / "b"
    shutil.copytree(ROOT / "examples" / "healthy-resume", bundle)
    _drop_pod(bundle, "sft-resumable-node-0-0-gxql2")
    kept = (bundle / "logs" / "sft-resumable-node-0-0-xk6fl" / "node.log").read_text()
    extra = bundle / "logs" / "sft-resumable-node-0-0-ab12c"
    extra.mkdir()
    # its lines come after attempt 0's (same format, later in the file order of the bundle)
    (extra / "node.log").write_text(kept.splitlines()[0] + "\n" + kept.splitlines()[1] + "\n")
    with open_bundle(bundle) as snap:
        diag = diagnose_snapshot(snap)
    by_id = {f.rule.id: f for f in diag.findings}
    assert by_id["fresh-start-after-restart"].status != "fail", by_id["fresh-start-after-restart"].result
    fresh = [r for r in diag.facts.history.runs if r.inferred and r.start()[0] == "fresh"]
    assert fresh and all(r.restart_attempt == 0 for r in fresh)

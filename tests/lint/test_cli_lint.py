"""`ckpt-doctor lint` as a command: flags, exit codes (contracts §1) and the text a human reads."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from tests.lint.conftest import FIXTURES, findings_schema, variant

GOOD = FIXTURES / "v2.1" / "good"


def test_exit_codes(tmp_path: Path, cli) -> None:
    assert cli("lint", str(GOOD))[0] == 0
    grace = variant("v2.1/grace-period").materialize(tmp_path / "a")  # a warning
    assert cli("lint", str(grace))[0] == 1  # default --fail-on warning
    assert cli("lint", str(grace), "--fail-on", "error")[0] == 0
    label = variant("v2.1/ancestor-label-on-pod-template").materialize(tmp_path / "b")  # an error
    assert cli("lint", str(label), "--fail-on", "error")[0] == 1
    assert cli("lint", str(label), "--fail-on", "critical")[0] == 0
    assert cli("lint", str(label), "--fail-on", "critical", "--strict")[0] == 4
    assert cli("lint", str(GOOD), "--trainer-version", "v9")[0] == 2
    assert cli("lint", str(GOOD), "--fail-on", "fatal")[0] == 2
    assert cli("lint")[0] == 2
    assert cli("lint", str(tmp_path / "missing"))[0] == 3


def test_text_output_points_at_file_line_and_fix(tmp_path: Path, cli) -> None:
    root = variant("v2.1/env-in-pod-template-overrides").materialize(tmp_path)
    rc, out, _err = cli("lint", str(root))
    assert rc == 1
    assert "env-in-pod-template-overrides" in out
    assert f"{root}/trainjob.yaml:30" in out
    assert "spec.trainer.env" in out  # the fix
    assert "rules need cluster evidence" in out  # symptoms are counted as not evaluated


def test_json_subjects_carry_file_and_line(tmp_path: Path, cli) -> None:
    root = variant("v2.1/sigterm-heredoc").materialize(tmp_path)
    rc, out, _err = cli("lint", str(root), "-o", "json")
    doc = json.loads(out)
    jsonschema.validate(doc, findings_schema())
    assert rc == 1 and doc["mode"] == "lint" and doc["target"] is None
    (f,) = [f for f in doc["findings"] if f["status"] == "fail"]
    assert f["rule"] == "sigterm-not-forwarded"
    assert f["subject"] == {
        "kind": "TrainingRuntime",
        "namespace": "team-a",
        "name": "sft-checkpoint-runtime",
        "file": f"{root}/runtime.yaml",
        "line": 37,
    }
    assert {"type": "file", "path": f"{root}/runtime.yaml", "line": 37, "text": "python - <<'PY'"} in f["evidence"]
    assert f["confidence"] == "high"


def test_several_trainjobs_one_document(tmp_path: Path, cli) -> None:
    rc, out, _err = cli("lint", str(FIXTURES / "v2.3" / "good"), str(FIXTURES / "v2.0" / "good"), "-o", "json")
    doc = json.loads(out)
    jsonschema.validate(doc, findings_schema())
    names = {f["subject"]["name"] for f in doc["findings"] if f["subject"]["kind"] == "TrainJob"}
    assert names == {"qwen-sft-0412", "llama-pretrain"}
    # one finding per rule per subject
    keys = [(f["rule"], f["subject"]["kind"], f["subject"]["name"]) for f in doc["findings"]]
    assert len(keys) == len(set(keys))
    # mixed versions: judged against the newest, so the v2.0 podSpecOverrides fail
    assert rc == 1
    assert [f["rule"] for f in doc["findings"] if f["status"] == "fail"] == ["override-field-unsupported"]


def test_verbose_lists_passes(cli) -> None:
    _rc, out, _err = cli("lint", str(GOOD), "-v")
    assert "PASSED" in out and "missing-ancestor-label" in out


def test_the_text_says_each_not_evaluated_reason_once_and_which_object_a_repeated_risk_is(
    tmp_path: Path, cli
) -> None:
    """Three TrainJobs of one runtime: "needs cluster evidence" was printed three times, word for word, and
    three latent risks of one rule with nothing to tell them apart."""
    from tests.lint.conftest import REPO

    src = REPO / "examples" / "healthy-resume"
    (tmp_path / "runtime.yaml").write_bytes((src / "runtime.yaml").read_bytes())
    tj = (src / "trainjob.yaml").read_text()
    for i in range(3):
        tj_i = tj.replace("  name: sft-resumable\n", f"  name: sft-run-{i}\n", 1)
        (tmp_path / f"trainjob-{i}.yaml").write_text(tj_i)
    _rc, out, _err = cli("lint", str(tmp_path), "-v")
    section = out.split("NOT EVALUATED", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert section and len(section) == len(set(section))  # no line twice
    assert any(line.startswith("  fresh-start-after-restart (3 objects): needs cluster evidence") for line in section)
    risks = [line for line in out.splitlines() if line.startswith("  - ")]
    assert len(risks) == len(set(risks))  # the same risk of several objects names each


def test_needs_cluster_evidence_is_one_line_with_a_count(cli) -> None:
    """Every lint run leaves the symptoms and cluster-only causes to a cluster: one line says how
    many, before the summary; -v lists them (issue 22)."""
    rc, out, _err = cli("lint", str(GOOD))
    assert rc == 0
    lines = [ln for ln in out.splitlines() if "cluster evidence" in ln]
    assert len(lines) == 1, lines
    assert "-v lists them" in lines[0]
    count = int(lines[0].split()[0])
    _rc, vout, _err = cli("lint", str(GOOD), "-v")
    listed = [ln for ln in vout.splitlines() if "needs cluster evidence" in ln]
    assert len(listed) == count >= 10

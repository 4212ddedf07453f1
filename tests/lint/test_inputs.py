"""Reading manifests: any mix of kinds and layouts, and bad input that is never fatal."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from ckpt_doctor.lint import lint_paths
from ckpt_doctor.sources.manifests import load_manifests, resolve_path
from tests.lint.conftest import FIXTURES, HERE, findings_schema

GOOD = FIXTURES / "v2.1" / "good"


def _concat(tmp_path: Path) -> Path:
    """The good v2.1 set as one multi-document file, as people keep it."""
    parts = [(GOOD / n).read_text() for n in ("pvc.yaml", "runtime.yaml", "train-script.yaml", "trainjob.yaml")]
    f = tmp_path / "all.yaml"
    f.write_text("---\n" + "---\n".join(parts))
    return f


def test_multi_document_file_keeps_lines(tmp_path: Path) -> None:
    f = _concat(tmp_path)
    mset = load_manifests([str(f)])
    kinds = sorted(o.kind for o in mset.snapshot.objects)
    assert kinds == ["ConfigMap", "PersistentVolumeClaim", "TrainJob", "TrainingRuntime"]
    lines = f.read_text().splitlines()
    for o in mset.snapshot.objects:
        assert o.origin.file == str(f)
        assert lines[o.origin.line - 1].startswith("apiVersion:"), (o.kind, o.origin.line)
    tj = next(o for o in mset.snapshot.objects if o.kind == "TrainJob")
    res = resolve_path(mset.node_of(tj), "spec.trainer.env[name=CKPT_DIR]")
    assert res.complete and "- name: CKPT_DIR" in lines[res.line - 1]
    assert lint_paths([str(f)]).failed() == []


def test_kind_list_and_json(tmp_path: Path) -> None:
    from ruamel.yaml import YAML  # a kubectl-style dump: `kubectl get -o json` of a List

    objs = [
        YAML(typ="safe").load((GOOD / n).read_text())
        for n in ("pvc.yaml", "runtime.yaml", "train-script.yaml", "trainjob.yaml")
    ]
    (tmp_path / "dump.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}, indent=2))
    result = lint_paths([str(tmp_path)])
    assert result.failed() == []
    tj = next(o for o in result.manifests.snapshot.objects if o.kind == "TrainJob")
    text = (tmp_path / "dump.json").read_text().splitlines()
    assert text[tj.origin.line - 1].strip() == "{" and '"apiVersion"' in text[tj.origin.line]


def test_bad_files_get_a_note_and_the_rest_is_linted(tmp_path: Path, cli) -> None:
    d = tmp_path / "repo"
    shutil.copytree(GOOD, d)
    (d / "broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\ndata:\n  a: b\n")
    (d / "values.yaml").write_text("replicaCount: 1\nimage:\n  tag: latest\n")
    (d / "templates").mkdir()
    (d / "templates" / "trainjob.yaml").write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: {{ .Values.name }}\n"
    )
    (d / "empty.yaml").write_text("# nothing yet\n")
    (d / "blob.json").write_bytes(b"\x00\x01\x02binary")
    (d / "README.md").write_text("# how to run\n")
    rc, out, err = cli("lint", str(d), "-o", "json")
    assert rc == 0, out + err
    doc = json.loads(out)
    jsonschema.validate(doc, findings_schema())
    notes = {g["what"].split(" ", 1)[1].split(":")[0]: g["reason"] for g in doc["notCollected"]}
    assert "not valid YAML" in notes[f"{d}/broken.yaml"]
    assert "no Kubernetes object" in notes[f"{d}/values.yaml"]
    assert "Helm/Go template" in notes[f"{d}/templates/trainjob.yaml"]
    assert "empty file" in notes[f"{d}/empty.yaml"] or "no Kubernetes object" in notes[f"{d}/empty.yaml"]
    assert "binary" in notes[f"{d}/blob.json"]
    assert not any("README" in k for k in notes)
    assert "Traceback" not in err
    for line in err.splitlines():  # one line per note on stderr for machine formats
        assert line.startswith("ckpt-doctor: note: ")
    assert doc["summary"]["fail"] == 0 and doc["summary"]["pass"] >= 19  # the StorageClass is not among them


def test_placeholders_are_reported_as_such_not_as_errors(tmp_path: Path) -> None:
    d = tmp_path / "tpl"
    shutil.copytree(GOOD, d)
    for f in d.iterdir():  # the way guides publish manifests
        f.write_text(f.read_text().replace("namespace: team-a", "namespace: <your-namespace>"))
    tj = (d / "trainjob.yaml").read_text().replace("value: /mnt/ckpt/sft-run-1", "value: <your-checkpoint-dir>")
    (d / "trainjob.yaml").write_text(tj)
    result = lint_paths([str(d)])
    ph = {p.text: p for p in result.manifests.placeholders}
    assert set(ph) == {"<your-namespace>", "<your-checkpoint-dir>"}
    assert len([p for p in result.manifests.placeholders if p.text == "<your-namespace>"]) == 4
    lines = tj.splitlines()
    assert "<your-checkpoint-dir>" in lines[ph["<your-checkpoint-dir>"].line - 1]
    assert result.failed() == [], [(f.rule.id, f.result.detail) for f in result.failed()]
    ckpt = [f for f in result.diagnosis.findings if f.rule.id == "ckpt-dir-not-persistent"]
    assert ckpt and all(f.status == "not_evaluated" and "<your-checkpoint-dir>" in f.result.reason for f in ckpt)
    gaps = [g for g in result.diagnosis.facts.scope.snap.not_collected if g.what.startswith("placeholder")]
    assert len(gaps) == 5 and all("fill it in" in g.reason for g in gaps)
    # the rest is judged as usual: the runtime resolves across the placeholder namespace
    assert next(f for f in result.diagnosis.findings if f.rule.id == "missing-ancestor-label").status == "pass"


def test_kustomize_folder_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without kubectl (tests/lint/test_render.py renders), the files are read as they are written."""
    from ckpt_doctor.sources import manifests

    monkeypatch.setattr(manifests, "find_tool", lambda name: None)
    base = tmp_path / "base"
    shutil.copytree(GOOD, base)
    overlay = tmp_path / "overlays" / "prod"
    overlay.mkdir(parents=True)
    (overlay / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: team-a\n"
        "resources:\n  - ../../base\npatches:\n  - path: more-gpus.yaml\n"
    )
    (overlay / "more-gpus.yaml").write_text(
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: sft-run-1\n"
        "spec:\n  trainer:\n    numNodes: 1\n"
    )
    result = lint_paths([str(overlay)])
    kinds = sorted(o.kind for o in result.manifests.snapshot.objects)
    assert kinds == ["ConfigMap", "PersistentVolumeClaim", "TrainJob", "TrainingRuntime"]  # the patch is not a TrainJob
    assert result.failed() == []
    msgs = " ".join(n.message for n in result.manifests.notes)
    assert "Kustomize patch" in msgs and "patches" in msgs


def test_duplicates_keep_the_first(tmp_path: Path) -> None:
    d = tmp_path / "dup"
    shutil.copytree(GOOD, d)
    shutil.copy(GOOD / "pvc.yaml", d / "pvc-copy.yaml")
    result = lint_paths([str(d)])
    assert any(n.kind == "duplicate" for n in result.manifests.notes)
    assert len(result.manifests.snapshot.of_kind("PersistentVolumeClaim")) == 1


def test_nothing_readable_as_a_manifest_is_exit_3_with_each_file_noted(tmp_path: Path, cli) -> None:
    """contracts.md §1: a manifest that cannot be read is an input error; each skipped file says why."""
    (tmp_path / "values.yaml").write_text("a: 1\n")
    (tmp_path / "broken.yaml").write_text("apiVersion: v1\nkind: [\n")
    (tmp_path / "notes.txt").write_text("hello\n")
    for path in (tmp_path / "values.yaml", tmp_path / "broken.yaml", tmp_path):
        rc, out, err = cli("lint", str(path), "-o", "json")
        assert rc == 3 and out == "", (path, rc, out)
        assert "could be read as a Kubernetes manifest" in err.splitlines()[-1]
        assert "Traceback" not in err
    _rc, _out, err = cli("lint", str(tmp_path))
    assert "values.yaml: " in err and "broken.yaml:" in err and "not valid YAML" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, _out, err = cli("lint", str(empty))
    assert rc == 3 and "no .yaml, .yml or .json file" in err
    assert cli("lint", str(tmp_path / "notes.txt"))[0] == 3


def test_unreadable_path_is_exit_3_with_one_line(tmp_path: Path, cli) -> None:
    rc, out, err = cli("lint", str(tmp_path / "nope.yaml"))
    assert rc == 3 and out == ""
    assert err.count("\n") == 1 and "nope.yaml" in err and "no such file" in err


def test_stdin(monkeypatch, cli) -> None:
    import io

    text = "---\n".join(
        (GOOD / n).read_text() for n in ("pvc.yaml", "runtime.yaml", "train-script.yaml", "trainjob.yaml")
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    rc, out, _err = cli("lint", "-", "-o", "json")
    doc = json.loads(out)
    assert rc == 0 and doc["summary"]["fail"] == 0
    assert {f["subject"]["file"] for f in doc["findings"]} == {"<stdin>"}


def test_runtime_alone_and_runtime_ref_not_among_files(tmp_path: Path) -> None:
    # the runtime on its own: judged without a TrainJob, the checkpoint volume is left to the TrainJob
    result = lint_paths([str(GOOD / "runtime.yaml")])
    assert result.failed() == []
    by_rule = {f.rule.id: f for f in result.diagnosis.findings}
    assert by_rule["missing-ancestor-label"].status == "pass"
    assert by_rule["ckpt-dir-not-persistent"].status == "not_evaluated"
    # the TrainJob on its own: its runtime is named as assumed, its rules are not evaluated
    result = lint_paths([str(GOOD / "trainjob.yaml")])
    assert result.failed() == []
    by_rule = {f.rule.id: f for f in result.diagnosis.findings}
    assert "not among the files" in by_rule["missing-ancestor-label"].result.reason
    assumed = [n.message for n in result.manifests.notes if n.kind == "assumed"]
    assert any("sft-checkpoint-runtime" in m for m in assumed)
    assert any("PersistentVolumeClaim 'sft-checkpoints'" in m for m in assumed)


def test_version_is_assumed_newest_and_says_so(tmp_path: Path) -> None:
    result = lint_paths([str(GOOD / "runtime.yaml")])
    assert result.version.version == "v2.3" and result.version.source == "assumed"
    assert "--trainer-version" in result.version.why
    doc = result.diagnosis.to_json()
    assert doc["trainerVersionSource"] == "assumed"
    assert any(g["what"].startswith("trainer version") for g in doc["notCollected"])


def test_mixed_versions_judge_against_the_newest(tmp_path: Path) -> None:
    d = tmp_path / "mixed"
    shutil.copytree(FIXTURES / "v2.3" / "good", d)
    shutil.copytree(GOOD, d / "old")
    result = lint_paths([str(d)])
    assert result.version.version == "v2.3" and "mix" in result.version.why
    (f,) = [f for f in result.failed() if f.rule.id == "override-field-unsupported"]
    assert f.result.subject["file"].endswith("old/trainjob.yaml") and f.result.confidence == "medium"


def test_a_runtime_alone_is_told_once_when_it_shows_no_checkpointing() -> None:
    """A stock runtime (image only, no volume, no directory) gets one info finding, no error per
    missing piece; a runtime whose script reads $CKPT_DIR leaves the question to its TrainJobs."""
    stock = lint_paths([str(HERE / "upstream" / "runtimes" / "torch-distributed.yaml")])
    assert [(f.rule.id, f.rule.severity) for f in stock.failed()] == [("not-set-up-for-resume", "info")]
    assert "failurePolicy" in str(stock.failed()[0].result.detail)
    by_rule = {f.rule.id: f for f in stock.diagnosis.findings}
    assert by_rule["no-failure-policy"].status == "not_evaluated"
    reads = lint_paths([str(FIXTURES / "v2.3" / "good" / "runtime.yaml")])
    by_rule = {f.rule.id: f for f in reads.diagnosis.findings}
    assert by_rule["not-set-up-for-resume"].status == "not_evaluated"
    assert "$CKPT_DIR" in str(by_rule["not-set-up-for-resume"].result.reason)


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_a_named_file_that_is_not_yaml_fails_the_check_after_the_others_are_linted(
    tmp_path: Path, cli, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:  # fmt: skip
    """A pre-apply gate given a good manifest and a broken one passed (exit 0, the broken one a note at the
    bottom) although kubectl apply would reject it: contracts.md §1 makes an unreadable manifest exit 3. The
    good one is still linted and printed; a broken file found in a folder stays a note (see above)."""
    good = tmp_path / "repo"
    shutil.copytree(GOOD, good)
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\ndata:\n  a: b\n")
    if how == "file":
        rc, out, err = cli("lint", str(broken), str(good), "-o", "json")
        name = str(broken)
    else:
        monkeypatch.setattr("sys.stdin", io.StringIO(broken.read_text()))
        rc, out, err = cli("lint", "-", str(good), "-o", "json")
        name = "<stdin>"
    assert rc == 3, err
    assert json.loads(out)["findings"], out  # the good files were linted
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"ckpt-doctor: error: {name}:") and "not valid YAML" in last, err
    assert "Traceback" not in err

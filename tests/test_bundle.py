"""The bundle reader: every layout contracts.md §2 allows, and clear exit-3 errors for bad input."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from pathlib import Path

from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.clirun import run_cli
from tests.scenario import Scenario
from tests.stories import emptydir_fresh_start, healthy_resume

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "emptydir-fresh-start"


def failed(path: Path, trainjob: str | None = None) -> set[str]:
    with open_bundle(path) as snap:
        return {f.rule.id for f in diagnose_snapshot(snap, trainjob).failed()}


def assert_input_error(path: Path, *needles: str, extra: tuple[str, ...] = ()) -> str:
    rc, _out, err = run_cli(["diagnose", "--bundle", str(path), *extra])
    assert rc == 3, err
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line, err
    for n in needles:
        assert n in line, line
    return line


def test_tar_gz_equals_directory(tmp_path: Path) -> None:
    tgz = tmp_path / "b.tar.gz"
    with tarfile.open(tgz, "w:gz") as tf:
        tf.add(EXAMPLE, arcname="emptydir-fresh-start")
    assert failed(tgz) == failed(EXAMPLE) == {"fresh-start-after-restart", "ckpt-dir-not-persistent"}


def test_missing_path(tmp_path: Path) -> None:
    assert_input_error(tmp_path / "nope", "no such file")


def test_broken_archive(tmp_path: Path) -> None:
    p = tmp_path / "broken.tar.gz"
    p.write_bytes(b"\x1f\x8b\x08\x00garbage" * 10)
    assert_input_error(p, "broken.tar.gz")


def test_archive_member_escaping(tmp_path: Path) -> None:
    p = tmp_path / "evil.tar.gz"
    with tarfile.open(p, "w:gz") as tf:
        data = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
        info = tarfile.TarInfo("../../escape.yaml")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    assert_input_error(p, "refused")
    assert not (tmp_path.parent / "escape.yaml").exists()


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    d = tmp_path / "b"
    shutil.copytree(EXAMPLE, d)
    (d / "extra.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n")
    line = assert_input_error(d, "extra.yaml", "malformed YAML", "line")
    assert line.startswith("ckpt-doctor: error:")


def test_malformed_json(tmp_path: Path) -> None:
    d = tmp_path / "b"
    shutil.copytree(EXAMPLE, d)
    (d / "pods2.json").write_text('{"apiVersion": "v1", "kind": "List", "items": [}')
    assert_input_error(d, "pods2.json", "malformed JSON")


def test_alias_bomb(tmp_path: Path) -> None:
    d = tmp_path / "b"
    shutil.copytree(EXAMPLE, d)
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [{','.join(['*a' + str(i - 1)] * 10)}]")
    (d / "bomb.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n"
        + "\n".join("  " + line for line in lines)
        + "\n"
    )
    assert_input_error(d, "bomb.yaml", "alias")


def test_binary_object_file(tmp_path: Path) -> None:
    d = tmp_path / "b"
    shutil.copytree(EXAMPLE, d)
    (d / "blob.yaml").write_bytes(b"\x00\x01\x02" * 1000)
    assert_input_error(d, "blob.yaml", "binary")


def test_no_trainjob(tmp_path: Path) -> None:
    d = tmp_path / "b"
    d.mkdir()
    (d / "pvc.yaml").write_text("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: ckpt}\n")
    assert_input_error(d, "no TrainJob")


def test_several_trainjobs(tmp_path: Path) -> None:
    d = tmp_path / "b"
    healthy_resume().write(d / "a")
    broken = emptydir_fresh_start()
    broken.name = "other-job"
    broken.write(d / "b")
    (d / "a" / "bundle.yaml").unlink()
    (d / "b" / "bundle.yaml").unlink()
    line = assert_input_error(d, "2 TrainJobs", "team-a/other-job", "team-a/sft-resumable")
    assert "--trainjob" in line
    # objects of the other TrainJob never produce the target's findings
    assert failed(d, "sft-resumable") == set()
    assert failed(d, "team-a/other-job") == {"fresh-start-after-restart", "ckpt-dir-not-persistent"}
    assert_input_error(d, "not found", extra=("--trainjob", "nope"))
    from tests.clirun import run_cli

    got = run_cli(["diagnose", "--bundle", str(d), "--trainjob", "team-a/x/y"])  # not a name of any shape
    assert got.rc == 2 and "expected NAME or NAMESPACE/NAME" in got.err


def test_unknown_kinds_are_ignored(tmp_path: Path) -> None:
    d = tmp_path / "b"
    shutil.copytree(EXAMPLE, d)
    (d / "misc.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: team-a}\nspec: {}\n---\n"
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\njust a string\n---\n- 1\n- 2\n"
    )
    (d / "notes.txt").write_text("not an object")
    assert failed(d) == failed(EXAMPLE)


def test_single_objects_multidoc_and_shorthand_logs(tmp_path: Path) -> None:
    s = emptydir_fresh_start()
    objs, logs = s.objects()
    d = tmp_path / "b"
    (d / "logs").mkdir(parents=True)
    (d / "all.yaml").write_text("\n---\n".join(json.dumps(o) for o in objs))  # JSON is YAML, one per document
    for (pod, _c, prev), text in logs.items():
        (d / "logs" / f"{pod}{'.previous' if prev else ''}.log").write_text(text)
    assert failed(d) == {"fresh-start-after-restart", "ckpt-dir-not-persistent"}


def test_bundle_yaml_not_collected_makes_rules_not_evaluated(tmp_path: Path) -> None:
    s = healthy_resume()
    s.drop_kinds = {"Event"}
    s.not_collected = [{"what": "events", "reason": "forbidden: cannot list events in team-a"}]
    d = s.write(tmp_path / "b")
    with open_bundle(d) as snap:
        diag = diagnose_snapshot(snap)
    ne = {f.rule.id: f.result.reason for f in diag.not_evaluated()}
    assert ne["volume-attach-blocked"].endswith("events not collected: forbidden: cannot list events in team-a")
    assert diag.to_json()["notCollected"] == [{"what": "events", "reason": "forbidden: cannot list events in team-a"}]


def test_scenario_builder_default_is_diagnosable(tmp_path: Path) -> None:
    d = Scenario().write(tmp_path / "b")
    with open_bundle(d) as snap:
        diag = diagnose_snapshot(snap)
    assert not diag.failed()


def test_overlapping_dumps_collapse_and_the_newer_copy_wins(tmp_path: Path) -> None:
    """issue 9: identical copies are one object; differing copies keep the higher resourceVersion, noted."""
    import shutil

    import yaml

    d = tmp_path / "b"
    shutil.copytree(ROOT / "examples" / "healthy-resume", d)
    shutil.copy(d / "trainjob.yaml", d / "again-trainjob.yaml")  # an identical second dump
    shutil.copy(d / "pods.yaml", d / "more-pods.yaml")
    js = yaml.safe_load((d / "jobset.yaml").read_text())
    js["metadata"]["resourceVersion"] = "1"
    js["status"]["restarts"] = 0  # an older copy: before the restart
    (d / "older-jobset.yaml").write_text(yaml.safe_dump(js))
    with open_bundle(d) as snap:
        assert len(snap.of_kind("TrainJob")) == 1
        diag = diagnose_snapshot(snap)  # one TrainJob: no --trainjob needed
        assert len(snap.of_kind("JobSet")) == 1 and snap.of_kind("JobSet")[0].status["restarts"] == 1
        assert len(snap.of_kind("Job")) == 2  # same name, two uids: a JobSet restart recreated it
        assert any("JobSet/team-a/sft-resumable appears twice" in n and "52390" in n for n in snap.notes)
    assert not diag.failed()


def test_an_object_file_under_logs_is_said_not_read(tmp_path: Path) -> None:
    """contracts.md §2: any nesting, except under logs/. A runtime put under a logs/ directory was dropped
    without a word, and the rules that need it went not_evaluated with no reason the user could act on."""
    from ckpt_doctor.sources.bundle import load_bundle

    d = tmp_path / "b"
    shutil.copytree(EXAMPLE, d)
    (d / "team" / "logs").mkdir(parents=True)
    (d / "runtime.yaml").rename(d / "team" / "logs" / "runtime.yaml")
    snap = load_bundle(d)
    assert any(n.startswith("team/logs/runtime.yaml: under logs/") for n in snap.notes), snap.notes


def test_configmaps_nothing_names_are_counted_not_read_and_never_absent(tmp_path: Path) -> None:
    """A namespace dump of ConfigMaps: the one the pods mount is read as before (the diagnosis is the same),
    the others are set aside unparsed, counted in a note, and known to be in the bundle, not absent."""
    from ckpt_doctor.coverage import ABSENT

    root = tmp_path / "b"
    shutil.copytree(ROOT / "examples" / "healthy-resume", root)
    mounted = (root / "configmaps.yaml").read_text()
    (root / "configmaps.yaml").unlink()
    items = "".join(
        f"- apiVersion: v1\n  data:\n    k: v{i}\n  kind: ConfigMap\n  metadata:\n    name: unrelated-{i}\n"
        f"    namespace: team-a\n"
        for i in range(50)
    )
    items += "- apiVersion: v1\n  data:\n    DB_PASSWORD: hunter2-x9\n  kind: ConfigMap\n  metadata:\n    name: creds\n"
    body = mounted.split("items:\n", 1)[1].split("\nmetadata:", 1)[0] + "\n"  # the mounted one, last
    tail = "kind: List\nmetadata:\n  resourceVersion: ''\n"
    (root / "dump.yaml").write_text(f"apiVersion: v1\nitems:\n{items}{body}{tail}")
    with open_bundle(ROOT / "examples" / "healthy-resume") as whole, open_bundle(root) as snap:
        # one that may hold a credential is read as before (the redactor learns from what is read)
        assert sorted(c.name for c in snap.of_kind("ConfigMap")) == sorted(["creds", "sft-resumable-script"])
        mounted_cm = next(c for c in snap.of_kind("ConfigMap") if c.name == "sft-resumable-script")
        assert mounted_cm.raw == whole.of_kind("ConfigMap")[0].raw
        assert any("50 ConfigMap(s)" in n and "counted, not read" in n for n in snap.notes)
        known = snap.coverage.object("ConfigMap", "unrelated-7", "team-a", False)
        assert known.state != ABSENT and "not read" in known.reason
        assert snap.coverage.kind("ConfigMap").state == "seen"
        a, b = diagnose_snapshot(whole), diagnose_snapshot(snap)
        assert [(f.rule.id, f.status) for f in a.findings] == [(f.rule.id, f.status) for f in b.findings]


def test_a_folder_of_bundles_is_refused_not_merged(tmp_path: Path) -> None:
    """`diagnose --bundle examples` read sixteen incidents as one TrainJob (the same name in each) and reported 8
    failures drawn from all of them, the conflicts only as notes: a folder whose subfolders are bundles of their own
    (each with its bundle.yaml), and that is not one itself, is an input error naming them."""
    d = tmp_path / "many"
    healthy_resume().write(d / "a")
    emptydir_fresh_start().write(d / "b")
    assert (d / "a" / "bundle.yaml").is_file() and (d / "b" / "bundle.yaml").is_file()
    line = assert_input_error(d, "holds several bundles", "a, b", "--bundle")
    assert str(d / "a") in line
    assert failed(d / "a", "sft-resumable") == set()  # each one alone is read as before

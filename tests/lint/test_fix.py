"""`lint --fix`: every mechanical fix round-trips (fixed files lint clean for the rule) and the
diff touches only the intended lines, with every comment intact."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from ckpt_doctor.lint import lint_paths
from tests.lint.conftest import variant


@dataclass
class FixCase:
    variant: str
    rule: str
    file: str
    removed: list[str]
    added: list[str]


CKPT_ENV = [
    "# One directory per run; every restart of this TrainJob resumes from it.",
    "- name: CKPT_DIR",
    "value: /mnt/ckpt/sft-run-1",
]
PTO_BLOCK = [
    "podTemplateOverrides:",
    "- targetJobs:",
    "- name: node",
    "spec:",
    "volumes:",
    "- name: ckpt",
    "persistentVolumeClaim:",
    "claimName: sft-checkpoints",
    "containers:",
    "- name: node",
    "volumeMounts:",
    "- name: ckpt",
    "mountPath: /mnt/ckpt",
]
RTP_BLOCK = [
    "runtimePatches:",
    "- manager: ckpt-doctor.local/overrides",
    "trainingRuntimeSpec:",
    "template:",
    "spec:",
    "replicatedJobs:",
    "- name: node",
    "template:",
    "spec:",
    "template:",
    "spec:",
    "volumes:",
    "- name: ckpt",
    "persistentVolumeClaim:",
    "claimName: sft-checkpoints",
    "containers:",
    "- name: node",
    "volumeMounts:",
    "- name: ckpt",
    "mountPath: /mnt/ckpt",
]

CASES = [
    FixCase(
        "v2.1/ancestor-label-on-pod-template",
        "missing-ancestor-label",
        "runtime.yaml",
        [],
        ["metadata:", "labels:", "trainer.kubeflow.org/trainjob-ancestor-step: trainer"],
    ),
    FixCase(
        "v2.0/no-ancestor-label",
        "missing-ancestor-label",
        "runtime.yaml",
        [],
        ["trainer.kubeflow.org/trainjob-ancestor-step: trainer"],
    ),
    FixCase(
        "v2.1/env-in-pod-template-overrides",
        "env-in-pod-template-overrides",
        "trainjob.yaml",
        ["env:", *CKPT_ENV],
        CKPT_ENV,
    ),
    FixCase(
        "v2.0/env-in-pod-spec-overrides",
        "env-in-pod-template-overrides",
        "trainjob.yaml",
        ["env:", "- name: NCCL_DEBUG", "value: WARN"],
        ["- name: NCCL_DEBUG", "value: WARN"],
    ),
    FixCase("v2.1/podtemplateoverrides-on-v2.3", "override-field-unsupported", "trainjob.yaml", PTO_BLOCK, RTP_BLOCK),
    FixCase("v2.1/no-failure-policy", "no-failure-policy", "runtime.yaml", [], ["failurePolicy:", "maxRestarts: 3"]),
    FixCase(
        "v2.1/backoff-limit",
        "backoff-limit-fights-restarts",
        "runtime.yaml",
        ["backoffLimit: 6  # retry the pod before giving up"],
        ["backoffLimit: 0  # retry the pod before giving up"],
    ),
    FixCase("v2.0/no-backoff-limit", "backoff-limit-fights-restarts", "runtime.yaml", [], ["backoffLimit: 0"]),
    FixCase(
        "v2.1/sigterm-heredoc", "sigterm-not-forwarded", "runtime.yaml", ["python - <<'PY'"], ["exec python - <<'PY'"]
    ),
    FixCase(
        "v2.3/sigterm-sh-c",
        "sigterm-not-forwarded",
        "runtime.yaml",
        [
            'command: ["sh", "-c", "pip install -q -r /opt/train/requirements.txt && torchrun '
            '--nproc_per_node=4 /opt/train/train.py"]'
        ],
        [
            'command: ["sh", "-c", "pip install -q -r /opt/train/requirements.txt && exec torchrun '
            '--nproc_per_node=4 /opt/train/train.py"]'
        ],
    ),
]


def _changes(old: str, new: str) -> tuple[list[str], list[str]]:
    removed, added = [], []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0):
        if line.startswith(("---", "+++", "@@")):
            continue
        (removed if line.startswith("-") else added).append(line[1:].strip())
    return removed, added


def _comments(text: str) -> list[str]:
    return [m.group(0).strip() for m in re.finditer(r"(?m)(?:^|\s)#[^\n]*$", text)]


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.iterdir())}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.variant)
def test_fix_round_trip(case: FixCase, tmp_path: Path, cli) -> None:
    v = variant(case.variant)
    root = v.materialize(tmp_path)
    before = _snapshot(root)
    old = (root / case.file).read_text()
    assert case.rule in {f.rule.id for f in lint_paths([str(root)], v.version_flag).failed()}

    # --dry-run prints the diff and writes nothing; its exit code is the files' as they are (not fixed)
    rc, diff, err = cli("lint", str(root), "--fix", "--dry-run", *v.flags)
    assert rc == lint_paths([str(root)], v.version_flag).exit_code(), err
    assert f"would fix {case.rule} in {root}/{case.file}" in err and "ckpt-doctor: fixed " not in err
    assert _snapshot(root) == before
    assert diff.startswith(f"--- a/{root}/{case.file}\n+++ b/{root}/{case.file}\n")

    rc, _out, err = cli("lint", str(root), "--fix", *v.flags)
    assert rc == 0, err  # the report printed after the fix is clean
    assert f"fixed {case.rule} in {root}/{case.file}" in err
    new = (root / case.file).read_text()
    # only the intended lines changed, and the dry run showed exactly this diff
    assert _changes(old, new) == (case.removed, case.added)
    assert diff == "".join(
        difflib.unified_diff(
            old.splitlines(True), new.splitlines(True), f"a/{root}/{case.file}", f"b/{root}/{case.file}"
        )
    )
    # comments intact
    for c in _comments(old):
        assert c in new, c
    # every other file untouched, not even rewritten
    after = _snapshot(root)
    for name, (data, mtime) in before.items():
        if name != case.file:
            assert after[name] == (data, mtime), name
    # the fixed files lint clean for the rule (and for everything else the variant had)
    result = lint_paths([str(root)], v.version_flag)
    assert result.failed() == [], [(f.rule.id, f.result.detail) for f in result.failed()]
    # a second --fix has nothing to do
    rc, _out, err = cli("lint", str(root), "--fix", *v.flags)
    assert rc == 0 and "nothing to fix mechanically" in err
    assert _snapshot(root)[case.file][0] == new.encode()


def test_conversion_keeps_the_checkpoint_mount(tmp_path: Path, cli) -> None:
    v = variant("v2.1/podtemplateoverrides-on-v2.3")
    root = v.materialize(tmp_path)
    cli("lint", str(root), "--fix", *v.flags)
    result = lint_paths([str(root)], "v2.3")
    (unit,) = [u for u in result.units if u.facts.scope.trainjob is not None]
    cd = unit.facts.ckpt_dir
    assert cd is not None and cd.claim == "sft-checkpoints" and cd.mount_path == "/mnt/ckpt"
    assert "runtimePatches" in unit.facts.scope.trainjob.spec
    assert "podTemplateOverrides" not in unit.facts.scope.trainjob.spec


@pytest.mark.parametrize(
    "name,why",
    [
        ("v2.3/sigterm-pipeline", "pipeline"),
        ("v2.0/runtime-patches-on-v2.0", "by hand"),
        ("v2.3/grace-period-in-patch-on-v2.2", "grace period"),
    ],
)
def test_not_mechanical_leaves_files_alone(name: str, why: str, tmp_path: Path, cli) -> None:
    v = variant(name)
    root = v.materialize(tmp_path)
    before = _snapshot(root)
    rc, _out, err = cli("lint", str(root), "--fix", *v.flags)
    assert rc == 1
    assert "not fixed" in err and why in err and "nothing to fix mechanically" in err
    assert _snapshot(root) == before


def test_several_fixes_in_one_file(tmp_path: Path, cli) -> None:
    v = variant("v2.1/sigterm-heredoc")
    root = v.materialize(tmp_path)
    rt = root / "runtime.yaml"
    text = rt.read_text()
    text = text.replace("      failurePolicy:\n        maxRestarts: 3\n", "")
    text = text.replace(
        "            metadata:\n              labels:\n                trainer.kubeflow.org/trainjob-ancestor-step"
        ": trainer\n",
        "            metadata:\n              labels:\n                team: nlp\n",
    )
    rt.write_text(text)
    fails = {f.rule.id for f in lint_paths([str(root)]).failed()}
    assert fails == {"sigterm-not-forwarded", "no-failure-policy", "missing-ancestor-label"}
    rc, _out, err = cli("lint", str(root), "--fix")
    assert rc == 0, err
    assert err.count("ckpt-doctor: fixed ") == 3
    removed, added = _changes(text, rt.read_text())
    assert removed == ["python - <<'PY'"]
    assert sorted(added) == sorted(
        [
            "failurePolicy:",
            "maxRestarts: 3",
            "trainer.kubeflow.org/trainjob-ancestor-step: trainer",
            "exec python - <<'PY'",
        ]
    )


def test_fix_never_touches_clean_files(tmp_path: Path, cli) -> None:
    v = variant("v2.1/no-failure-policy")
    root = v.materialize(tmp_path)
    os.utime(root / "trainjob.yaml", ns=(1, 1))
    cli("lint", str(root), "--fix")
    assert (root / "trainjob.yaml").stat().st_mtime_ns == 1


def test_env_in_runtime_patches_moves_to_trainer_env(tmp_path: Path, cli) -> None:
    root = tmp_path / "m"
    import shutil

    from tests.lint.conftest import FIXTURES

    shutil.copytree(FIXTURES / "v2.3" / "good", root)
    tj = root / "trainjob.yaml"
    old = tj.read_text().replace(
        "                          - name: node\n                            volumeMounts:\n",
        "                          - name: node\n"
        "                            env:\n"
        "                              - name: HF_HUB_OFFLINE  # the cluster has no internet\n"
        '                                value: "1"\n'
        "                            volumeMounts:\n",
    )
    tj.write_text(old)
    assert [f.rule.id for f in lint_paths([str(root)]).failed()] == ["env-in-pod-template-overrides"]
    rc, _out, err = cli("lint", str(root), "--fix")
    assert rc == 0, err
    removed, added = _changes(old, tj.read_text())
    assert removed == ["env:", "- name: HF_HUB_OFFLINE  # the cluster has no internet", 'value: "1"']
    assert added == ["- name: HF_HUB_OFFLINE  # the cluster has no internet", 'value: "1"']
    result = lint_paths([str(root)])
    assert result.failed() == []
    (unit,) = [u for u in result.units if u.facts.scope.trainjob is not None]
    assert unit.facts.spec.env()["HF_HUB_OFFLINE"] == "1"


def test_fix_refuses_to_rewrite_a_file_that_is_not_utf8(tmp_path: Path, cli) -> None:
    v = variant("v2.1/no-failure-policy")
    root = v.materialize(tmp_path)
    runtime = root / "runtime.yaml"
    runtime.write_bytes(runtime.read_bytes() + b"# caf\xe9 (latin-1)\n")
    before = runtime.read_bytes()
    _rc, _out, err = cli("lint", str(root), "--fix", *v.flags)
    assert "not valid UTF-8" in err
    assert runtime.read_bytes() == before


def test_a_file_that_cannot_be_written_is_one_line_and_exit_3(tmp_path: Path, cli, monkeypatch) -> None:
    v = variant("v2.1/no-failure-policy")
    root = v.materialize(tmp_path)
    before = (root / "runtime.yaml").read_bytes()

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    rc, _out, err = cli("lint", str(root), "--fix", *v.flags)
    assert rc == 3
    assert err.strip().splitlines()[-1].startswith("ckpt-doctor: error:") and "Traceback" not in err
    assert "cannot write the fixed file: Permission denied" in err
    assert (root / "runtime.yaml").read_bytes() == before
    assert not list(root.glob(".*ckpt-doctor-fix"))


@pytest.mark.parametrize("version", ["v2.1", "v2.2"])
def test_an_override_that_held_only_env_goes_with_it(version: str, tmp_path: Path, cli) -> None:
    """The env moves to spec.trainer.env; the override left with nothing but its targetJobs goes too (it
    stayed, and on v2.2 became a runtimePatch with an empty template)."""
    from ruamel.yaml import YAML

    from tests.lint.conftest import REPO

    (tmp_path / "trainjob.yaml").write_bytes((REPO / "examples/env-in-overrides-rejected/trainjob.yaml").read_bytes())
    _rc, _out, err = cli("lint", str(tmp_path), "--fix", "--trainer-version", version)
    assert "fixed env-in-pod-template-overrides" in err and "not fixed" not in err, err
    spec = YAML(typ="safe").load((tmp_path / "trainjob.yaml").read_text())["spec"]
    assert "podTemplateOverrides" not in spec and "runtimePatches" not in spec
    assert spec["trainer"]["env"] == [{"name": "CKPT_DIR", "value": "/mnt/ckpt/sft-resumable"}]
    assert "env-in-pod-template-overrides" not in {f.rule.id for f in lint_paths([str(tmp_path)], version).failed()}

"""Heuristics in the training command: the same rule wherever the setting is written (config file,
command-line override, inline YAML in a shell script), and the shell analysis behind `exec`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ckpt_doctor.facts.program.shell import parse_shell
from ckpt_doctor.lint import lint_paths
from tests.lint.conftest import FIXTURES

LF = FIXTURES / "frameworks" / "llamafactory-good"
LF_CMD = '                      command: ["llamafactory-cli", "train", "/opt/train/qwen2.5_lora_sft.yaml"]\n'


def _lf_set(tmp_path: Path, command: str) -> Path:
    root = tmp_path / "m"
    shutil.copytree(FIXTURES / "v2.3" / "good", root)
    for f in LF.iterdir():
        if f.name != "expect.yaml":
            shutil.copy(f, root / f.name)
    rt = root / "runtime.yaml"
    text = rt.read_text()
    assert LF_CMD in text
    rt.write_text(text.replace(LF_CMD, command))
    return root


def _failed(root: Path) -> list[tuple[str, str, int]]:
    return sorted(
        (f.rule.id, Path(f.result.subject["file"]).name, f.result.subject["line"])
        for f in lint_paths([str(root)]).failed()
    )


def _line(root: Path, name: str, needle: str) -> int:
    return next(i for i, ln in enumerate((root / name).read_text().splitlines(), 1) if needle in ln)


def test_llamafactory_override_on_the_command_line(tmp_path: Path) -> None:
    root = _lf_set(
        tmp_path,
        '                      command: ["llamafactory-cli", "train", "/opt/train/qwen2.5_lora_sft.yaml", '
        '"overwrite_output_dir=true"]\n',
    )
    assert _failed(root) == [
        ("llamafactory-overwrite-output-dir", "runtime.yaml", _line(root, "runtime.yaml", "overwrite_output_dir=true"))
    ]


def test_llamafactory_inline_yaml_in_a_shell_script(tmp_path: Path) -> None:
    script = """                      command:
                        - bash
                        - -ec
                        - |
                          cat > /tmp/sft.yaml <<'EOF'
                          model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct
                          stage: sft
                          do_train: true
                          finetuning_type: lora
                          dataset: alpaca_en_demo
                          template: qwen
                          output_dir: /mnt/ckpt/qwen-sft-0412
                          save_steps: 200
                          save_total_limit: 3
                          overwrite_output_dir: true
                          resume_from_checkpoint: true
                          EOF
                          exec llamafactory-cli train /tmp/sft.yaml
"""
    root = _lf_set(tmp_path, script)
    assert _failed(root) == sorted(
        [
            (
                "llamafactory-overwrite-output-dir",
                "runtime.yaml",
                _line(root, "runtime.yaml", "overwrite_output_dir: true"),
            ),
            ("resume-true-hardcoded", "runtime.yaml", _line(root, "runtime.yaml", "resume_from_checkpoint: true")),
        ]
    )


def test_hostpath_checkpoint_volume(tmp_path: Path) -> None:
    root = tmp_path / "m"
    shutil.copytree(FIXTURES / "v2.1" / "good", root)
    tj = root / "trainjob.yaml"
    tj.write_text(
        tj.read_text().replace(
            "            persistentVolumeClaim:\n              claimName: sft-checkpoints\n",
            "            hostPath:\n              path: /data/ckpt\n              type: DirectoryOrCreate\n",
        )
    )
    result = lint_paths([str(root)])
    (f,) = result.failed()
    assert f.rule.id == "ckpt-dir-not-persistent" and "hostPath" in f.result.detail


def test_trainer_not_last_is_reported_but_not_fixed(tmp_path: Path, cli) -> None:
    root = tmp_path / "m"
    shutil.copytree(FIXTURES / "v2.3" / "good", root)
    rt = root / "runtime.yaml"
    rt.write_text(
        rt.read_text().replace(
            '                          exec torchrun --nproc_per_node="${PET_NPROC_PER_NODE}" /opt/train/train.py\n',
            '                          torchrun --nproc_per_node="${PET_NPROC_PER_NODE}" /opt/train/train.py\n'
            '                          echo "training finished"\n',
        )
    )
    assert [r for r, _f, _l in _failed(root)] == ["sigterm-not-forwarded"]
    before = rt.read_bytes()
    rc, _out, err = cli("lint", str(root), "--fix")
    assert rc == 1 and "not the trainer" in err and rt.read_bytes() == before


@pytest.mark.parametrize(
    "script,line,col,first,pipeline,background,heredoc",
    [
        ("set -e\ncd /w && python train.py", 1, 9, "python", False, False, False),
        ("python - <<'PY'\nimport os\nPY\n", 0, 0, "python", False, False, True),
        ("torchrun \\\n  --nproc=8 \\\n  train.py", 0, 0, "torchrun", False, False, False),
        ("python t.py 2>&1 | tee log", 0, 0, "python", True, False, False),
        ("python t.py &\nwait", 0, 0, "python", False, True, False),
        ("python t.py; echo 'a; b'  # done", 0, 0, "python", False, False, False),
        ("cd /a && \\\n  python t.py > log 2>&1", 1, 2, "python", False, False, False),
    ],
)
def test_the_trainer_command_where_exec_would_go(script, line, col, first, pipeline, background, heredoc) -> None:
    """The one shell reader both judges sigterm-not-forwarded and places `exec` for --fix."""
    c = parse_shell(script).trainer()
    assert c is not None
    assert (c.line, c.col, c.text.split()[0], c.pipeline, c.background, bool(c.heredocs)) == (
        line,
        col,
        first,
        pipeline,
        background,
        heredoc,
    )


RUN_TAG_SET = FIXTURES / "v2.1" / "broken" / "ckpt-dir-run-tag"
RUN_TAG_LINE = '        RUN_TAG="$(date +%Y%m%d-%H%M%S)"  # a new directory on every start\n'


@pytest.mark.parametrize(
    ("assignment", "status"),
    [
        ('RUN_TAG="$(date +%s)"', "fail"),
        ("RUN_TAG=`date +%F-%T`", "fail"),
        ("RUN_TAG=$(hostname)", "fail"),
        ('RUN_TAG="run-$HOSTNAME"', "fail"),
        ('STAMP=$(date +%s); RUN_TAG="sft-$STAMP"', "fail"),  # through another variable
        ("RUN_TAG=sft-run-1", "pass"),  # a constant: the same directory on every start
        ("RUN_TAG=$(cat /etc/run-id)", "not_evaluated"),  # unknown is not absent: cannot be resolved
    ],
)
def test_ckpt_dir_from_a_shell_variable_set_per_start(tmp_path: Path, assignment: str, status: str) -> None:
    """A variable assigned from the time, the host or the pod name in the -c script, used in
    --output_dir a few lines below, makes the directory change on every start (issue 22)."""
    root = tmp_path / "m"
    shutil.copytree(FIXTURES / "v2.1" / "good", root)
    text = (RUN_TAG_SET / "trainjob.yaml").read_text()
    assert RUN_TAG_LINE in text
    (root / "trainjob.yaml").write_text(text.replace(RUN_TAG_LINE, f"        {assignment}\n"))
    (f,) = [f for f in lint_paths([str(root)]).diagnosis.findings if f.rule.id == "ckpt-dir-changed"]
    assert f.status == status, (f.result.detail, f.result.reason)

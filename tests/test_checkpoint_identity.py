"""Checkpoint identity follows the framework's layout (issue 19 §4): `ckpt-dir-changed` compares the directories
the framework saves *into*, on the real runs (recordings/) and on variants of them.

- A file checkpoint (Lightning's `step=N.ckpt`) is saved into its directory: two of them in one directory are
  not two directories (issue 19: a confident false alarm on a healthy Lightning job).
- A tag inside another framework's checkpoint (DeepSpeed's `global_stepN` inside HF Trainer's `checkpoint-N`,
  named relative to it by DeepSpeed's `Checkpoint global_stepN is about to be saved!`) is not a directory to
  compare with HF's output directory (issue 19: a false alarm on a healthy HF + DeepSpeed job).
- A directory built from the clock, the host name or a random id is a new one after every restart
  (recordings `*-dir-changes`: `os.path.join(CKPT_DIR, time.strftime("run-%Y%m%d-%H%M%S"))`), whether the
  program passes it to the framework (`output_dir=`, `dirpath=`) or to its own saves (`save_state`, `dcp.save`,
  `save_checkpoint`); and with the code unread, the saves the logs name show it.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from ckpt_doctor.facts.program.python.reader import read_python
from ckpt_doctor.facts.storage import save_into
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import all_runs, write_bundle

RUNS = {r["id"]: r for r in all_runs()}
RULE = "ckpt-dir-changed"


def status(b: Path, rule: str = RULE) -> tuple[str, str]:
    with open_bundle(b) as snap:
        diag = diagnose_snapshot(snap)
    [f] = [f for f in diag.findings if f.rule.id == rule]
    return f.status, f.result.detail or f.result.reason or ""


def logs_by_attempt(b: Path) -> dict[int, Path]:
    items = yaml.safe_load((b / "pods.yaml").read_text())["items"]
    return {int(p["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"]): b / "logs" / p["metadata"]["name"]
            / "node.log" for p in items}  # fmt: skip


@pytest.mark.parametrize(
    ("path", "step", "into"),
    [
        ("/out/checkpoint-10", 10, "/out"),
        ("/out/checkpoint-10/", None, "/out"),
        ("/ckpt/step=10.ckpt", 10, "/ckpt"),
        ("/workspace/log/epoch=9-step=16000-v1.ckpt", 16000, "/workspace/log"),
        ("/ckpt/last.ckpt", None, "/ckpt"),
        ("/out/checkpoint-10/global_step10", 10, "/out"),
        ("/out/checkpoint-10/global_step10", None, "/out"),
        ("/out/global_step1000/mp_rank_00_model_states.pt", 1000, "/out"),
        ("/ck/iter_0000100", 100, "/ck"),
        ("/mnt/ckpt/run/step_20", 20, "/mnt/ckpt/run"),
        ("/mnt/ckpt/run/step_000020.pt", 20, "/mnt/ckpt/run"),
        ("/mnt/checkpoints/run/run-20261202-004528/checkpoint-20", 20, "/mnt/checkpoints/run/run-20261202-004528"),
        ("/ck/run/10/default", 10, "/ck/run"),
        ("global_step10", 10, None),  # relative to a directory the line does not name
        ("checkpoint-10", 10, None),
    ],
)
def test_the_directory_a_checkpoint_was_saved_into(path: str, step: int | None, into: str | None) -> None:
    assert save_into(path, step) == into


# -- false alarms on healthy jobs -----------------------------------------------------------------------------


def _saving_twice(framework: str) -> list[str]:
    """Healthy runs of `framework` whose attempts saved in at least two of them."""
    return sorted(r for r, run in RUNS.items() if run["framework"] == framework and run["scenario"] != "dir-changes"
                  and sum(bool(a["saves_complete"]) for a in run["attempts"]) >= 2)  # fmt: skip


LIGHTNING = _saving_twice("lightning")
HF = _saving_twice("hf-trainer")


def test_there_are_such_runs() -> None:
    assert len(LIGHTNING) >= 4 and len(HF) >= 6


@pytest.mark.parametrize("rid", LIGHTNING)
def test_lightning_checkpoint_files_in_one_directory_are_one_directory(tmp_path: Path, rid: str) -> None:
    """ModelCheckpoint(verbose=True) names each `step=N.ckpt` it writes: files of one directory, attempt after
    attempt (its real line: `Epoch E, global step N: 'step' reached … saving model to '…/step=N.ckpt' as top K`)."""
    run = RUNS[rid]
    b = write_bundle(run, "jobset-kept", tmp_path)
    for i, log in logs_by_attempt(b).items():
        lines = [f"Epoch 0, global step {s}: 'step' reached {s}.00000 (best {s}.00000), saving model to "
                 f"'{p}' as top 3\n" for p in run["attempts"][i]["save_paths"]
                 for s in [int(m.group(1)) for m in [re.search(r"step=(\d+)\.ckpt$", p)] if m]]  # fmt: skip
        log.write_text(log.read_text() + "".join(lines))
    got, why = status(b)
    assert got == "pass", why
    assert "same directory, /mnt/checkpoints/run" in why


def _with_deepspeed(text: str) -> str:
    """HF Trainer driving DeepSpeed: after HF's `Saving model checkpoint to …/checkpoint-N`, DeepSpeed's own lines
    (tests/corpus/logs/deepspeed.yaml) name the tag `global_stepN` it writes inside `checkpoint-N`."""
    out = []
    for line in text.splitlines(keepends=True):
        out.append(line)
        m = re.search(r"Saving model checkpoint to (\S*/checkpoint-(\d+))", line)
        if m:
            d, n = m.group(1), m.group(2)
            out.append(f"[2026-12-02 00:10:00,646] [INFO] [logging.py:128:log_dist] [Rank 0] [Torch] Checkpoint "
                       f"global_step{n} is about to be saved!\n")  # fmt: skip
            out.append(f"[2026-12-02 00:10:00,700] [INFO] [engine.py:3427:_save_checkpoint] Saving model checkpoint: "
                       f"{d}/global_step{n}/mp_rank_00_model_states.pt\n")  # fmt: skip
            out.append(f"[2026-12-02 00:10:01,100] [INFO] [torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint "
                       f"global_step{n} is ready now!\n")  # fmt: skip
    return "".join(out)


@pytest.mark.parametrize("rid", HF)
def test_a_deepspeed_tag_inside_hf_checkpoints_is_no_other_directory(tmp_path: Path, rid: str) -> None:
    b = write_bundle(RUNS[rid], "jobset-kept", tmp_path)
    for log in logs_by_attempt(b).values():
        log.write_text(_with_deepspeed(log.read_text()))
    got, why = status(b)
    assert got != "fail", why


# -- a directory that changes -----------------------------------------------------------------------------------
DIR_CHANGES = sorted(r for r, run in RUNS.items() if run["scenario"] == "dir-changes")


def test_a_directory_built_from_a_value_of_the_start_is_seen_in_the_code() -> None:
    """Over the programs of every dir-changes run that save through a call the reader knows, and over variants
    of the value that changes (the clock, the host name, a random id, the pod's name)."""
    seen = 0
    for rid in DIR_CHANGES:
        facts = read_python((RUNS[rid]["_dir"] / "workspace/train.py").read_text())
        if "CKPT_DIR" in facts.dynamic_names:
            seen += 1
            assert "time.strftime" in facts.dynamic_names["CKPT_DIR"][0]
    assert seen >= 6
    for expr in ('datetime.now().strftime("%Y%m%d")', "str(uuid.uuid4())[:8]", "socket.gethostname()",
                 'os.environ["HOSTNAME"]', 'os.getenv("POD_NAME", "x")', "f'{time.time():.0f}'"):  # fmt: skip
        src = (f"import os, time, uuid, socket\nfrom datetime import datetime\n"
               f"RUN = {expr}\nOUT = os.path.join('/mnt/ckpt', RUN)\n")  # fmt: skip
        assert "OUT" in read_python(src).dynamic_names, expr
    fixed = "import os\nRUN = os.environ.get('RUN_NAME', 'run-1')\nOUT = os.path.join('/mnt/ckpt', RUN)\n"
    assert read_python(fixed).dynamic_names == {}


@pytest.mark.parametrize("rid", DIR_CHANGES)
def test_a_directory_that_changes_per_start_fails(tmp_path: Path, rid: str) -> None:
    got, why = status(write_bundle(RUNS[rid], "jobset-gone", tmp_path))
    assert got == "fail", why
    if RUNS[rid]["framework"] != "orbax":  # Orbax's CheckpointManager is not read from code: its listing shows it
        assert "time.strftime" in why


@pytest.mark.parametrize("rid", DIR_CHANGES)
def test_with_the_code_and_the_logs_gone_the_listing_shows_the_change(tmp_path: Path, rid: str) -> None:
    """Only the last pod's listing: a directory of checkpoints written before the restart, another after it."""
    b = write_bundle(RUNS[rid], "jobset-gone", tmp_path)
    _hide_the_script(b)
    shutil.rmtree(b / "logs")
    got, why = status(b)
    assert got == "fail", why
    assert "saved into a new directory" in why


def _hide_the_script(b: Path) -> None:
    """The script is in the image, not in a ConfigMap the bundle holds: the code is not read."""
    for f in b.glob("configmaps.yaml"):
        f.unlink()

    def drop(node: object) -> object:
        if isinstance(node, dict):
            return {k: drop(v) for k, v in node.items()}
        if isinstance(node, list):
            return [drop(x) for x in node if not (isinstance(x, dict) and x.get("name") == "train-script")]
        return node

    for f in (b / "pods.yaml", b / "jobs.yaml", b / "runtime.yaml", b / "jobset.yaml"):
        if f.exists():
            f.write_text(yaml.safe_dump(drop(yaml.safe_load(f.read_text())), sort_keys=False))


def _paths_read(b: Path) -> int:
    """In how many attempts' logs the reader finds a save, or a resume or fresh-start line, naming a path."""
    with open_bundle(b) as snap:
        diag = diagnose_snapshot(snap)
    runs = diag.facts.history.runs
    return len({r.attempt for r in runs if any(e.path for e in r.saves()) or (r.start()[2] and r.start()[2].path)})


@pytest.mark.parametrize("rid", DIR_CHANGES)
def test_with_the_code_unread_the_logs_show_the_change(tmp_path: Path, rid: str) -> None:
    b = write_bundle(RUNS[rid], "jobset-kept", tmp_path)
    shutil.rmtree(b / "checkpoints", ignore_errors=True)
    _hide_the_script(b)
    if _paths_read(b) < 2:
        pytest.skip("the log reader shows no save or resume line with a path in both attempts' logs")
    got, why = status(b)
    assert got == "fail", why
    assert "run-" in why

"""The rules a checkpoint listing speaks to, on the healthy-resume story with a listing added by hand (the
commands of docs/bundle.md): each failure quotes the entry, and a listing that is missing, refused or malformed
never makes a rule pass or fail on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.stories import STORIES

ROOT = Path(__file__).resolve().parents[2]
RUNNING = "sft-resumable-node-0-0-xk6fl"  # attempt 1, running since 08:40:30 (collected 10:00)
CK = "/mnt/ckpt/sft-resumable"
T = 1796025600.0  # 2026-11-30T08:00:00Z
FULL = ("model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json",
        "training_args.bin")  # fmt: skip


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    s = next(x for x in STORIES if x.name == "healthy-resume").build()
    d = tmp_path / "b"
    s.write(d)
    return d


def _ckpt(step: int, t: float, files: tuple[str, ...] = FULL, size: int = 1000) -> list[str]:
    out = [f"d 4096 {t:.3f} {CK}/checkpoint-{step}"]
    out += [f"f {size} {t + i * 0.1:.3f} {CK}/checkpoint-{step}/{f}" for i, f in enumerate(files)]
    return out


def _listing(d: Path, lines: list[str], at: str = "2026-11-30T10:00:00Z", df: str | None = None,
             pod: str = RUNNING) -> None:  # fmt: skip
    c = d / "checkpoints" / pod
    c.mkdir(parents=True, exist_ok=True)
    (c / "node.txt").write_text(f"# dir: {CK}\n# at: {at}\n" + "\n".join([f"d 4096 {T + 5000:.3f} {CK}", *lines])
                                + "\n")  # fmt: skip
    if df is not None:
        (c / "node.df").write_text(df)


def _diag(d: Path) -> dict[str, dict[str, Any]]:
    with open_bundle(d) as snap:
        doc = diagnose_snapshot(snap).to_json()
    schema = yaml.safe_load((ROOT / "docs" / "findings.schema.json").read_text())
    jsonschema.validate(doc, schema)
    return {f["rule"]: f for f in doc["findings"]}


def _checkpoint_ev(f: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in f["evidence"] if e["type"] == "checkpoint"]


def test_healthy_listing_changes_no_verdict(bundle: Path) -> None:
    before = {r: f["status"] for r, f in _diag(bundle).items()}
    _listing(bundle, _ckpt(100, T + 1000) + _ckpt(150, T + 1600) + _ckpt(200, T + 5000))
    after = _diag(bundle)
    assert {r: f["status"] for r, f in after.items()} == before
    assert "checkpoint-200" in after["partial-latest-checkpoint"]["reason"]


HALF = ("model.safetensors", "optimizer.pt")
# the story's discovery keeps only checkpoints holding trainer_state.json (as its ConfigMap's YAML quotes it)
FILTER = '    ckpts = [c for c in ckpts if os.path.exists(os.path.join(c, \\"trainer_state.json\\"))]\\n'


def test_a_half_written_newest_checkpoint_the_program_skips(bundle: Path) -> None:
    """The story's script keeps only checkpoints holding trainer_state.json: it resumes from checkpoint-150."""
    _listing(bundle, _ckpt(150, T + 1600) + _ckpt(200, T + 5000, HALF))
    f = _diag(bundle)["partial-latest-checkpoint"]
    assert f["status"] == "pass" and "picks checkpoint-150, complete" in f["reason"]


def test_a_half_written_newest_checkpoint_the_resume_picks(bundle: Path) -> None:
    script = bundle / "configmaps.yaml"
    text = script.read_text()
    assert FILTER in text
    script.write_text(text.replace(FILTER, ""))
    # written at 09:23, the listing at 10:00 while attempt 1 runs: not a save in progress
    _listing(bundle, _ckpt(150, T + 1600) + _ckpt(200, T + 5000, HALF))
    f = _diag(bundle)["partial-latest-checkpoint"]
    assert f["status"] == "fail", f.get("reason")
    ev = _checkpoint_ev(f)[0]
    assert ev["path"] == f"{CK}/checkpoint-200" and ev["complete"] is False and "trainer_state.json" in ev["why"]
    assert ev["listedAt"] == "2026-11-30T10:00:00Z" and ev["listing"] == f"checkpoints/{RUNNING}/node.txt"
    assert ev["line"] == 11 and ev["size"] == 2000


def test_a_save_still_being_written_is_not_held_against_it(bundle: Path) -> None:
    at = T + 7200
    _listing(bundle, _ckpt(150, T + 1600) + _ckpt(200, at - 20, ("model.safetensors",)))
    f = _diag(bundle)["partial-latest-checkpoint"]
    assert f["status"] != "fail"


def test_a_checkpoint_without_optimizer_state(bundle: Path) -> None:
    only = ("model.safetensors", "trainer_state.json", "training_args.bin")
    _listing(bundle, _ckpt(150, T + 1600, only) + _ckpt(200, T + 5000, only))
    f = _diag(bundle)["weights-only-checkpoint"]
    assert f["status"] == "fail" and "optimizer" in f["detail"], f.get("reason")
    assert _checkpoint_ev(f)[0]["path"].endswith("checkpoint-200")


DF = "Filesystem 1-blocks Used Available Capacity Mounted on\n/dev/rbd0 10000000 9999000 {free} 99% /mnt/ckpt\n"


def test_less_room_than_one_more_checkpoint(bundle: Path) -> None:
    _listing(bundle, _ckpt(150, T + 1600, size=10_000), df=DF.format(free=5_000))
    f = _diag(bundle)["checkpoint-disk-full"]
    assert f["status"] == "fail" and "the next save fails" in f["detail"]
    assert any(e.get("free") == 5_000 for e in f["evidence"])


def test_room_enough_is_said_not_judged(bundle: Path) -> None:
    _listing(bundle, _ckpt(150, T + 1600, size=10_000), df=DF.format(free=900_000))
    f = _diag(bundle)["checkpoint-disk-full"]
    assert f["status"] == "pass" and "free on /mnt/ckpt" in f["reason"]


def test_accumulating_checkpoints_are_counted(bundle: Path) -> None:
    script = bundle / "configmaps.yaml"
    script.write_text(script.read_text().replace(", save_total_limit=3", ""))
    _listing(bundle, [x for n in range(5) for x in _ckpt(50 * (n + 1), T + 600 * (n + 1))],
             df=DF.format(free=900_000))  # fmt: skip
    f = _diag(bundle)["save-total-limit-unset"]
    assert f["status"] == "fail"
    assert "5 complete checkpoints" in f["detail"] and "per hour" in f["detail"] and "full in about" in f["detail"]


@pytest.mark.parametrize(
    ("text", "gap", "said"),
    [
        ("d 4096 1.0 /x\nnot a listing\n", None, "line 2"),
        (None, "forbidden: cannot create pods/exec in team-a", "forbidden"),
    ],
)
def test_unknown_listings_decide_nothing(bundle: Path, text: str | None, gap: str | None, said: str) -> None:
    before = {r: f["status"] for r, f in _diag(bundle).items()}
    if text is not None:
        c = bundle / "checkpoints" / RUNNING
        c.mkdir(parents=True)
        (c / "node.txt").write_text(text)
    if gap is not None:
        meta = yaml.safe_load((bundle / "bundle.yaml").read_text())
        meta["notCollected"] = [{"what": f"checkpoints/{RUNNING}/node", "reason": gap}]
        (bundle / "bundle.yaml").write_text(yaml.safe_dump(meta))
    after = _diag(bundle)
    assert {r: f["status"] for r, f in after.items()} == before
    assert said in after["partial-latest-checkpoint"]["reason"]


def test_files_under_checkpoints_are_never_objects(bundle: Path) -> None:
    _listing(bundle, _ckpt(150, T + 1600))
    kept = bundle / "checkpoints" / RUNNING / "node" / "checkpoint-150"
    kept.mkdir(parents=True)
    (kept / "trainer_state.json").write_text('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}')
    with open_bundle(bundle) as snap:
        assert snap.get("Pod", "x") is None
        src = snap.checkpoints[(RUNNING, "node")]
        assert list(src.files) == ["checkpoint-150/trainer_state.json"]


def test_only_the_targets_listings_are_read(bundle: Path) -> None:
    """With two TrainJobs in the bundle, a listing of another TrainJob's pod never speaks for the target; one whose
    `# trainjob:` line names the target (a reader pod's) does."""
    tj = yaml.safe_load((bundle / "trainjob.yaml").read_text())
    other = {**tj, "metadata": {**tj["metadata"], "name": "other-run", "uid": "0000-other"}}
    (bundle / "other-trainjob.yaml").write_text(yaml.safe_dump(other))
    script = bundle / "configmaps.yaml"  # a discovery that picks the half-written newest
    text = script.read_text()
    script.write_text(text.replace(FILTER, ""))
    half = _ckpt(150, T + 1600) + _ckpt(200, T + 5000, HALF)
    _listing(bundle, half, pod="other-run-node-0-0-abcde")
    with open_bundle(bundle) as snap:
        doc = diagnose_snapshot(snap, "sft-resumable").to_json()
    f = next(x for x in doc["findings"] if x["rule"] == "partial-latest-checkpoint")
    assert f["status"] != "fail" and "checkpoint-200" not in str(f)
    _listing(bundle, half, pod="ckpt-doctor-reader-abcde")
    node = bundle / "checkpoints" / "ckpt-doctor-reader-abcde" / "node.txt"
    node.write_text("# trainjob: team-a/sft-resumable\n" + node.read_text())
    with open_bundle(bundle) as snap:
        doc = diagnose_snapshot(snap, "sft-resumable").to_json()
    f = next(x for x in doc["findings"] if x["rule"] == "partial-latest-checkpoint")
    assert f["status"] == "fail" and f["evidence"][0]["pod"] == "ckpt-doctor-reader-abcde"

"""The simulated trainer replays a recording (TEAM.md's format): its lines are the recording's, the steps in them
the ones this simulated attempt reached, the checkpoint directory the job's; a save leaves the recording's files
on the volume, its last-written file making it complete. The recording here is derived from an example's
generated logs, for the tests only (see its run.yaml); the real ones come from recordings/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ckpt_doctor.drill import verify
from ckpt_doctor.errors import InputError
from ckpt_doctor.facts.logs import load_signatures, scan_log
from ckpt_doctor.sandbox.cluster import Sandbox
from ckpt_doctor.sandbox.recordings import find_recording, load_recording
from ckpt_doctor.sandbox.voice import RecordingVoice
from ckpt_doctor.sandbox.volume import Volume
from ckpt_doctor.snapshot import LogRef
from tests.clirun import run_cli
from tests.watch.conftest import wait_for

ROOT = Path(__file__).parent / "recordings"
DIR = "/mnt/ckpt/healthy-resume"


def read(text: str) -> list[tuple[str, int | None]]:
    raw = text.encode()
    summary = scan_log(LogRef("p", "node", False, head=raw, size=len(raw)), load_signatures())
    return [(e.kind, e.step) for e in summary.events if e.kind != "progress" or e.bar == "train"]


@pytest.fixture
def voice() -> RecordingVoice:
    rec = find_recording("derived-healthy-resume", [ROOT])
    assert rec is not None
    return RecordingVoice(rec)


def test_a_replayed_attempt_reads_as_the_steps_it_reached(voice: RecordingVoice) -> None:
    text = voice.opening(230, f"{DIR}/checkpoint-230", 1000, DIR) + voice.steps(231, 260, 1000, [250], DIR)
    events = read(text)
    assert ("resumed", 230) in events and ("saved", 250) in events
    steps = [s for k, s in events if k == "progress" and s is not None]
    assert steps and max(steps) == 260 and min(steps) > 230
    assert f"resuming from {DIR}/checkpoint-230" in text and "sft-resumable" not in text
    assert "{'loss': 2.2500, 'learning_rate': 1.9e-05, 'epoch': 0.10}" in text  # the recording's own line
    fresh = voice.opening(None, None, 1000, DIR)
    assert ("fresh_start", None) in read(fresh) or any(k == "fresh_start" for k, _ in read(fresh))


def test_a_save_leaves_the_recordings_files(voice: RecordingVoice) -> None:
    vol = Volume()
    vol.save(DIR, voice.checkpoint_name(250), voice.checkpoint_files(250))
    assert vol.checkpoints(DIR, voice.marker) == {250: True}
    rc, out = vol.answer(["cat", f"{DIR}/checkpoint-250/trainer_state.json"])
    assert rc == 0 and json.loads(out)["global_step"] == 250
    files = voice.checkpoint_files(300)
    vol.save(DIR, voice.checkpoint_name(300), files, upto=len(files) - 1)  # cut short before its last file
    assert vol.checkpoints(DIR, voice.marker) == {250: True, 300: False}
    rc, out = vol.answer(["find", DIR, "-maxdepth", "4", "-printf", "%y %s %T@ %p\\n"])
    assert rc == 0 and "f 988097824 " in out.decode() and f"{DIR}/checkpoint-300/optimizer.pt" in out.decode()


def test_the_drill_passes_on_a_trainer_that_speaks_a_recording(voice: RecordingVoice, tmp_path: Path) -> None:
    from tests.drill.conftest import playbook_file

    pb = playbook_file(tmp_path / "pb.yaml")
    with Sandbox(["healthy-resume"], speed=4.0, voices={"healthy-resume": voice}) as sb:
        assert sb.spoken["healthy-resume"] == "recording derived-healthy-resume"
        got = run_cli(["drill", "sandbox/healthy-resume", "--yes", "-o", "json", "--kubeconfig", str(sb.kubeconfig),
                       "--playbook", str(pb)])
        doc = got.json()
        assert doc["verdict"] == "passed", got.err
        crash = next(s for s in doc["steps"] if s["id"] == "crash")
        assert "resumed from step" in crash["observed"]
        pod = wait_for(lambda: next((p for p in sb.api.objects("pods", "sandbox") if verify.running(p)), None),
                       "the trainer to run again")
        logged = sb.api.get_log("sandbox", pod["metadata"]["name"], "node")
        assert b"{'loss': " in logged and f"resuming from {DIR}/checkpoint-".encode() in logged  # the recording's
        assert sb.errors() == []


def test_a_broken_recording_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "run.yaml").write_text("id: bad\nattempts: []\n")
    with pytest.raises(InputError, match="at least one attempt"):
        load_recording(bad)
    (bad / "run.yaml").write_text("id: bad\nattempts:\n  - {index: 0, saves_complete: [a]}\n")
    with pytest.raises(InputError, match="saves_complete"):
        load_recording(bad)
    assert find_recording("nowhere", [tmp_path]) is None

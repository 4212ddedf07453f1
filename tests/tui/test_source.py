"""Reading a bundle in a child process: a fork before the app starts, a fresh interpreter after;
a preview first, then everything; archives; errors that say what is wrong."""

from __future__ import annotations

import os
import pickle
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ckpt_doctor.errors import InputError
from ckpt_doctor.tui.source import BundleLoader, Superseded, _Run
from ckpt_doctor.tui.target import Target
from tests.tui.conftest import EXAMPLES, NAME, NS

KEY = f"{NS}/{NAME}"


def test_fork_before_the_app_then_a_preview_then_everything() -> None:
    loader = BundleLoader(Target(bundle=EXAMPLES / "final-checkpoint-missing"))
    try:
        single = threading.active_count() == 1
        loader.start()
        run = loader._run
        assert run is not None and (run.pid is not None) == single  # a fork only while single-threaded
        assert [r.key for r in loader.list_jobs()] == [KEY]
        first = loader.load(KEY)
        full = loader.load_complete(KEY)
        assert full.complete and full.diag is not None and full.objects and full.events == []
        assert first.verdict[0].symptom.id == full.verdict[0].symptom.id == "final-checkpoint-missing"
        loader.reload()  # a refresh: a fresh interpreter, never a fork of a threaded process
        assert loader.load_complete(KEY).complete
        assert loader._run is not None and loader._run.proc is not None
    finally:
        loader.close()


def test_trainjob_by_name_only(tmp_path: Path) -> None:
    loader = BundleLoader(Target(bundle=EXAMPLES / "final-checkpoint-missing", trainjob=NAME))
    try:
        view = loader.load(NAME)
        assert view.key == KEY
        assert loader.load_complete(NAME).complete
        with pytest.raises(InputError, match="not found"):
            BundleLoader(Target(bundle=EXAMPLES / "final-checkpoint-missing", trainjob="nope")).load("nope")
    finally:
        loader.close()


def test_archive_logs_stay_readable_after_the_child_exits(tmp_path: Path) -> None:
    archive = tmp_path / "b.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(EXAMPLES / "final-checkpoint-missing", arcname="incident")
    loader = BundleLoader(Target(bundle=archive))
    try:
        view = loader.load_complete(KEY)
        ref = view.logs[0].ref
        assert ref.path is not None and ref.read_head(64)  # the extracted copy lives as long as the loader
    finally:
        loader.close()
    assert not Path(ref.path).exists()


def test_a_broken_bundle_says_why(tmp_path: Path) -> None:
    (tmp_path / "pods.yaml").write_text("kind: Pod\napiVersion: v1\nmetadata: {name: [unclosed\n")
    loader = BundleLoader(Target(bundle=tmp_path))
    try:
        with pytest.raises(InputError, match="malformed YAML"):
            loader.list_jobs()
    finally:
        loader.close()
    empty = BundleLoader(Target(bundle=EXAMPLES / "final-checkpoint-missing" / "logs"))
    try:
        assert empty.list_jobs() == []
        with pytest.raises(InputError, match="not in the bundle"):
            empty.load("x")
    finally:
        empty.close()


TEAM_SIGNATURES = """\
framework: team-trainer
signatures:
  - id: team-saved
    event: saved
    keyword: "TEAM SAVED"
    pattern: 'TEAM SAVED (?P<path>\\S*?checkpoint-(?P<step>\\d+))'
"""


def engine_flags_target(tmp_path: Path) -> Target:
    """A bundle that does not say its Trainer version, plus a directory of the team's own signatures."""
    from tests.stories import healthy_resume

    s = healthy_resume()
    s.bundle_meta = None
    bundle = s.write(tmp_path / "bundle")
    sigs = tmp_path / "sigs"
    sigs.mkdir()
    (sigs / "team.yaml").write_text(TEAM_SIGNATURES)
    return Target(bundle=bundle, trainer_version="v2.0.1", signatures=(sigs,))


def test_trainer_version_and_signatures_reach_the_bundle_child(tmp_path: Path) -> None:
    target = engine_flags_target(tmp_path)
    for flags, want in ((True, True), (False, False)):
        t = target if flags else Target(bundle=target.bundle)
        loader = BundleLoader(t)
        try:
            view = loader.load_complete(loader.list_jobs()[0].key)  # a fresh interpreter: flags on its command line
            assert view.version.startswith("v2.0 ") is want
            assert ("team-saved" in {s.id for s in view.signatures}) is want
        finally:
            loader.close()


FORKED = """
import json, sys
from pathlib import Path
from ckpt_doctor.tui.source import BundleLoader, Superseded, _Run
from ckpt_doctor.tui.target import Target

target = Target(bundle=Path(sys.argv[1]), trainer_version="v2.0.1", signatures=(Path(sys.argv[2]),))
loader = BundleLoader(target)
loader.start()  # one thread here: a fork
try:
    view = loader.load_complete(loader.list_jobs()[0].key)
    print(json.dumps({"forked": loader._run.pid is not None, "version": view.version,
                      "signatures": sorted(s.id for s in view.signatures)}))
finally:
    loader.close()
"""


def test_trainer_version_and_signatures_reach_a_forked_child(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from tests.tui.conftest import ROOT

    target = engine_flags_target(tmp_path)  # run in a fresh, single-threaded interpreter: forking is safe
    argv = [sys.executable, "-c", FORKED, str(target.bundle), str(target.signatures[0])]
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["forked"] is True
    assert got["version"].startswith("v2.0 ")
    assert "team-saved" in got["signatures"]


def fake_child() -> tuple[_Run, int]:
    """A `_Run` listening on a pipe the test writes frames into (no child process)."""
    r, w = os.pipe()
    run = _Run.__new__(_Run)
    run.stderr, run.proc, run.pid = tempfile.TemporaryFile(), None, None
    run.stdout = os.fdopen(r, "rb")
    run._listen()
    return run, w


def frame(*parts: object) -> bytes:
    data = pickle.dumps(parts)
    return len(data).to_bytes(8, "big") + data


def until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "never happened"
        time.sleep(0.005)


def test_frames_wait_as_bytes_until_asked_then_only_as_many_as_the_question_needs() -> None:
    run, w = fake_child()
    try:
        os.write(w, frame("rows", ["a"]) + frame("view", "a", "preview") + frame("full", "a", "everything"))
        until(lambda: len(run._backlog) == 3)  # all read; the reader now blocks on the open pipe
        assert run.rows is None and run.views == {}  # nobody asked: nothing unpickled
        run.wait(lambda: run.rows is not None)
        assert run.rows == ["a"] and len(run._backlog) == 2  # the views wait for a question about them
        run.wait(lambda: "a" in run.views)
        assert run.views == {"a": "preview"} and len(run._backlog) == 1
    finally:
        os.close(w)
    run.wait(lambda: run.views.get("a") == "everything")  # the end of the stream: the rest is taken
    until(lambda: run.finished)
    assert run._backlog == []


def test_a_stream_that_ends_before_anyone_asks_is_kept_for_the_first_question() -> None:
    run, w = fake_child()
    os.write(w, frame("rows", ["a"]) + frame("done"))
    os.close(w)
    time.sleep(0.2)
    assert not run.finished and run.rows is None  # held, not judged "failed" for lack of rows
    run.wait(lambda: run.rows is not None)
    until(lambda: run.finished)
    assert run.rows == ["a"] and run.fatal is None


def test_stop_wakes_a_waiter_with_superseded_and_drops_the_held_frames() -> None:
    run, w = fake_child()
    os.write(w, frame("rows", ["a"]))
    until(lambda: len(run._backlog) == 1)
    errors: list[BaseException] = []

    def waiter() -> None:
        try:
            run.wait(lambda: "a" in run.views)  # never sent
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.1)
    run.stop()
    t.join(timeout=10)
    os.close(w)
    until(lambda: run.finished)
    assert not t.is_alive() and len(errors) == 1 and isinstance(errors[0], Superseded)
    assert run.fatal is None  # a stop is not a failure of the bundle


def test_a_garbled_frame_held_until_asked_is_an_input_error() -> None:
    run, w = fake_child()
    os.write(w, (5).to_bytes(8, "big") + b"junk!")
    os.close(w)
    with pytest.raises(InputError, match="reading the bundle failed"):
        run.wait(lambda: run.rows is not None)


def test_head_start_needs_most_of_a_processor_idle_beside_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    from ckpt_doctor.tui import source

    monkeypatch.setattr(source.os, "cpu_count", lambda: 2)
    for idle, want in ((150, True), (80, True), (60, False), (10, False)):  # ticks idle of 200 (2 cpus)
        times = iter([(1000, 5000), (1000 + idle, 5200)])
        monkeypatch.setattr(source, "_cpu_times", lambda times=times: next(times))
        assert source.head_start(window=0) is want, idle

    def no_proc() -> tuple[int, int]:
        raise OSError("no /proc/stat")

    monkeypatch.setattr(source, "_cpu_times", no_proc)  # elsewhere: the load average
    monkeypatch.setattr(source.os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    assert source.head_start(window=0) is True
    monkeypatch.setattr(source.os, "getloadavg", lambda: (1.2, 1.0, 1.0))
    assert source.head_start(window=0) is False



BUSY = """
import json, os, sys, time
from pathlib import Path
from ckpt_doctor.tui import source
from ckpt_doctor.tui.target import Target

source.head_start = lambda: False  # a busy machine: the fork waits for the app's first question
loader = source.BundleLoader(Target(bundle=Path(sys.argv[1])))
loader.start()  # one thread here: a fork
run = loader._run
if sys.argv[2] == "ask":
    time.sleep(1.0)  # time enough for a child that did not wait to send its rows
    early = bool(run._backlog)
    rows = [r.key for r in loader.list_jobs()]  # the first question lets it go
    print(json.dumps({"forked": run.pid is not None, "early": early, "rows": rows}))
else:
    go, run._go = run._go, None
    os.close(go)  # the app went away without a question: the pipe closes without a byte
    with run.cond:  # the child leaves, its pipe ends: the reader finishes (and reaps it)
        left = run.cond.wait_for(lambda: run.finished, timeout=60)
    print(json.dumps({"left": left, "sent": bool(run._backlog)}))
loader.close()
"""


@pytest.mark.parametrize(
    ("mode", "want"),
    [("ask", {"forked": True, "early": False, "rows": [KEY]}), ("leave", {"left": True, "sent": False})],
)
def test_on_a_busy_machine_the_fork_reads_once_asked_and_leaves_if_never_asked(mode: str, want: dict) -> None:
    import json
    import subprocess
    import sys

    from tests.tui.conftest import ROOT

    argv = [sys.executable, "-c", BUSY, str(EXAMPLES / "final-checkpoint-missing"), mode]
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == want

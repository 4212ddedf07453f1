"""Reading a bundle in a child process: a fork before the app starts, a fresh interpreter after;
a preview first, then everything; archives; errors that say what is wrong."""

from __future__ import annotations

import tarfile
import threading
from pathlib import Path

import pytest

from ckpt_doctor.errors import InputError
from ckpt_doctor.tui.source import BundleLoader
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


def test_trainer_version_and_signatures_reach_a_forked_child(tmp_path: Path) -> None:
    import io
    import pickle

    from ckpt_doctor.tui.bundleproc import serve

    target = engine_flags_target(tmp_path)
    out = io.BytesIO()
    assert target.bundle is not None
    serve(target.bundle, None, None, out, target.trainer_version, target.signatures)  # what the fork runs
    data, frames = out.getvalue(), []
    while data:
        n = int.from_bytes(data[:8], "big")
        frames.append(pickle.loads(data[8 : 8 + n]))
        data = data[8 + n :]
    full = next(f[2] for f in frames if f[0] == "full")
    assert full.version.startswith("v2.0 ")
    assert "team-saved" in {s.id for s in full.signatures}

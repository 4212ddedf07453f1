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

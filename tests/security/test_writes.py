"""Safe writes: lint --fix, collect -o and the app's exports go through safewrite (mkstemp beside the target, no
symlink followed at a temporary name, os.replace, mode and line endings kept, read-only and existing outputs
refused unless --force, hard links and symlinked manifests handled as documented in docs/security.md)."""

from __future__ import annotations

import os
import stat
import tarfile
from pathlib import Path

import pytest

from ckpt_doctor import safewrite
from ckpt_doctor.safewrite import WriteRefused, edit_in_place, match_newlines, output_stream, write_output
from tests.clirun import run_cli
from tests.lint.conftest import variant

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def _fixable(tmp_path: Path) -> tuple[Path, list[str]]:
    v = variant("v2.1/no-failure-policy")
    root = v.materialize(tmp_path / "m")
    return root / "runtime.yaml", v.flags


# -- lint --fix -----------------------------------------------------------------------------------------


def test_fix_never_follows_a_symlink_planted_at_a_temporary_name(tmp_path: Path) -> None:
    runtime, flags = _fixable(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    victim.chmod(0o600)
    for name in (f".{runtime.name}.ckpt-doctor-fix", f".{runtime.name}.tmp", f"{runtime.name}.tmp"):
        (runtime.parent / name).symlink_to(victim)  # the old fixed name, and likely guesses
    got = run_cli(["lint", str(runtime.parent), "--fix", *flags])
    assert "fixed no-failure-policy" in got.err, got.err
    assert victim.read_text() == "precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert "failurePolicy" in runtime.read_text()
    leftovers = [p.name for p in runtime.parent.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]
    assert leftovers == []


def test_fix_keeps_the_mode_and_says_what_it_wrote(tmp_path: Path) -> None:
    runtime, flags = _fixable(tmp_path)
    runtime.chmod(0o600)
    got = run_cli(["lint", str(runtime.parent), "--fix", *flags])
    assert stat.S_IMODE(runtime.stat().st_mode) == 0o600
    assert f"replaced {runtime}" in got.err and "bytes)" in got.err


def test_fix_keeps_crlf_line_endings(tmp_path: Path) -> None:
    runtime, flags = _fixable(tmp_path)
    runtime.write_bytes(runtime.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    run_cli(["lint", str(runtime.parent), "--fix", *flags])
    data = runtime.read_bytes()
    assert b"failurePolicy" in data
    assert data.count(b"\n") == data.count(b"\r\n"), "a lone LF crept into a CRLF file"


def test_fix_refuses_a_read_only_file(tmp_path: Path) -> None:
    runtime, flags = _fixable(tmp_path)
    before = runtime.read_bytes()
    runtime.chmod(0o444)
    got = run_cli(["lint", str(runtime.parent), "--fix", *flags])
    assert "not written" in got.err and "read-only" in got.err and "Traceback" not in got.err
    assert runtime.read_bytes() == before and stat.S_IMODE(runtime.stat().st_mode) == 0o444
    assert got.rc == 1  # the finding is still there


def test_fix_edits_a_symlinked_manifest_where_it_points(tmp_path: Path) -> None:
    runtime, flags = _fixable(tmp_path)
    real = tmp_path / "shared" / "runtime.yaml"
    real.parent.mkdir()
    runtime.rename(real)
    runtime.symlink_to(real)
    got = run_cli(["lint", str(runtime.parent), "--fix", *flags])
    assert runtime.is_symlink() and os.readlink(runtime) == str(real)
    assert "failurePolicy" in real.read_text()
    assert f"{runtime} is a symlink: the file it points to was edited" in got.err


def test_fix_refuses_a_hard_linked_manifest(tmp_path: Path) -> None:
    runtime, flags = _fixable(tmp_path)
    twin = tmp_path / "twin.yaml"
    os.link(runtime, twin)
    before = runtime.read_bytes()
    got = run_cli(["lint", str(runtime.parent), "--fix", *flags])
    assert "has 2 hard links; not edited" in got.err
    assert runtime.read_bytes() == before == twin.read_bytes()
    assert os.stat(runtime).st_ino == os.stat(twin).st_ino  # still one file


# -- collect -o -------------------------------------------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path):  # type: ignore[no-untyped-def]
    from tests.fakeapi.server import FakeKube
    from tests.stories import healthy_resume

    bundle = healthy_resume().write(tmp_path / "src")
    with FakeKube() as kube:
        kube.load_bundle(bundle)
        yield kube.kubeconfig(tmp_path / "kc", namespace="team-a")


def test_collect_refuses_an_existing_output_unless_forced(served: Path, tmp_path: Path) -> None:
    out = tmp_path / "b.tgz"
    out.write_text("an older bundle\n")
    out.chmod(0o640)
    got = run_cli(["collect", "sft-resumable", "-o", str(out), "--kubeconfig", str(served), "-q"])
    assert got.rc == 3 and "exists" in got.err and "--force" in got.err
    assert out.read_text() == "an older bundle\n"
    forced = run_cli(["collect", "sft-resumable", "-o", str(out), "--kubeconfig", str(served), "-q", "--force"])
    assert forced.rc == 0, forced.err
    assert tarfile.is_tarfile(out) and stat.S_IMODE(out.stat().st_mode) == 0o640


def test_collect_to_a_folder_over_a_file_needs_force_and_then_replaces_it(served: Path, tmp_path: Path) -> None:
    out = tmp_path / "evidence"  # a folder bundle, where a file stands
    out.write_text("notes\n")
    got = run_cli(["collect", "sft-resumable", "-o", str(out), "--kubeconfig", str(served), "-q"])
    assert got.rc == 3 and "--force" in got.err and out.read_text() == "notes\n"
    forced = run_cli(["collect", "sft-resumable", "-o", str(out), "--kubeconfig", str(served), "-q", "--force"])
    assert forced.rc == 0, forced.err  # it collected everything, then failed: "Not a directory"
    assert (out / "bundle.yaml").exists()


def test_collect_never_writes_through_a_symlink(served: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "b.tgz"
    out.symlink_to(victim)
    got = run_cli(["collect", "sft-resumable", "-o", str(out), "--kubeconfig", str(served), "-q"])
    assert got.rc == 3 and "symlink" in got.err
    forced = run_cli(["collect", "sft-resumable", "-o", str(out), "--kubeconfig", str(served), "--force"])
    assert forced.rc == 0 and victim.read_text() == "precious\n"
    assert not out.is_symlink() and tarfile.is_tarfile(out)
    assert "replaced what was at" in forced.err and "what it pointed to is untouched" in forced.err


def test_collect_to_a_new_archive_is_private(served: Path, tmp_path: Path) -> None:
    out = tmp_path / "new.tgz"
    assert run_cli(["collect", "sft-resumable", "-o", str(out), "--kubeconfig", str(served), "-q"]).rc == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".new.tgz")] == []


# -- the helper itself ------------------------------------------------------------------------------------


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.md"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), output_stream(target, force=True) as out:
        out.file.write(b"half")
        raise RuntimeError("disk full")
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.md"]


def test_write_output_refuses_directories_and_read_only_files(tmp_path: Path) -> None:
    with pytest.raises(WriteRefused, match="directory"):
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "x").write_text("x")
        write_output(tmp_path / "d", "x", force=True)
    ro = tmp_path / "ro.md"
    ro.write_text("x")
    ro.chmod(0o444)
    with pytest.raises(WriteRefused, match="read-only"):
        write_output(ro, "y", force=True)
    with pytest.raises(WriteRefused, match=r"no such|does not exist"):
        write_output(tmp_path / "missing" / "x.md", "y")


def test_write_output_of_a_hard_linked_file_leaves_the_other_name_alone(tmp_path: Path) -> None:
    a = tmp_path / "a.md"
    a.write_text("old\n")
    os.link(a, tmp_path / "b.md")
    w = write_output(a, "new\n", force=True)
    assert a.read_text() == "new\n" and (tmp_path / "b.md").read_text() == "old\n"
    assert "other names keep the old content" in w.describe()


def test_edit_in_place_and_newlines(tmp_path: Path) -> None:
    f = tmp_path / "m.yaml"
    f.write_bytes(b"a: 1\r\n")
    f.chmod(0o640)
    w = edit_in_place(f, match_newlines("a: 1\r\n", "a: 1\nb: 2\n"))
    assert f.read_bytes() == b"a: 1\r\nb: 2\r\n" and stat.S_IMODE(f.stat().st_mode) == 0o640 and w.replaced
    assert match_newlines("a\nb\n", "a\nb\nc\n") == "a\nb\nc\n"


def test_fresh_paths_never_reuse_an_export_name(tmp_path: Path) -> None:
    p = tmp_path / "ckpt-doctor-x.md"
    assert safewrite.fresh_path(p) == p
    p.symlink_to(tmp_path / "elsewhere")  # even a dangling symlink counts as taken
    assert safewrite.fresh_path(p) == tmp_path / "ckpt-doctor-x-2.md"


async def test_the_app_exports_never_overwrite_or_follow_symlinks(tmp_path: Path) -> None:
    from ckpt_doctor.tui.app import DoctorApp
    from ckpt_doctor.tui.target import Target
    from tests.tui.conftest import EXAMPLES, settle_until

    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "exports"
    out.mkdir()
    (out / "ckpt-doctor-team-a-sft-resumable.md").symlink_to(victim)
    app = DoctorApp(Target(bundle=EXAMPLES / "healthy-resume", trainjob="team-a/sft-resumable"), export_dir=out)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle_until(pilot, lambda: app.view is not None and app.view.diag is not None)
        app.action_export_report()
        app.action_export_report()
        app.action_screenshot()
        await pilot.pause()
        await app.workers.wait_for_complete()  # the exports write in a worker
    assert victim.read_text() == "precious\n"
    names = sorted(p.name for p in out.iterdir())
    assert "ckpt-doctor-team-a-sft-resumable-2.md" in names and "ckpt-doctor-team-a-sft-resumable-3.md" in names
    assert any(n.endswith(".svg") for n in names)
    assert not any(n.endswith(".tmp") for n in names)


# -- replacing as root keeps the owner and the mode ----------------------------------------------------------

OTHER = (4321, 4321)  # a user and group that are not the one running the tests
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")


def _theirs(path: Path, mode: int = 0o640, text: str = "theirs\n") -> Path:
    path.write_text(text)
    os.chown(path, *OTHER)
    path.chmod(mode)
    return path


def _owner_and_mode(path: Path) -> tuple[int, int, int]:
    st = path.lstat()
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


@as_root
def test_write_output_as_root_keeps_the_owner_and_the_mode(tmp_path: Path) -> None:
    """Replacing a user's report as root gave it to root: the user could no longer edit or remove it."""
    out = _theirs(tmp_path / "report.md")
    w = write_output(out, "new\n", force=True)
    assert out.read_text() == "new\n" and _owner_and_mode(out) == (*OTHER, 0o640), w.describe()


@as_root
def test_a_streamed_output_and_an_edit_in_place_keep_the_owner_too(tmp_path: Path) -> None:
    out = _theirs(tmp_path / "b.tgz", 0o600)
    with output_stream(out, force=True) as stream:
        stream.file.write(b"bundle")
    assert _owner_and_mode(out) == (*OTHER, 0o600)
    manifest = _theirs(tmp_path / "m.yaml", 0o664, "a: 1\n")
    edit_in_place(manifest, "a: 2\n")
    assert manifest.read_text() == "a: 2\n" and _owner_and_mode(manifest) == (*OTHER, 0o664)


@as_root
def test_set_id_bits_are_not_kept_on_what_is_written(tmp_path: Path) -> None:
    out = _theirs(tmp_path / "x.md", 0o4755)
    write_output(out, "new\n", force=True)
    assert _owner_and_mode(out) == (*OTHER, 0o755)


@as_root
def test_every_verb_that_writes_refuses_without_force_and_keeps_the_owner(served: Path, tmp_path: Path) -> None:
    """collect -o (an archive, a folder), report --out, lint --fix: what each wrote over a user's file, as root."""
    examples = Path(__file__).resolve().parents[2] / "examples" / "lexical-sort-older"
    live = ["--kubeconfig", str(served), "-q"]
    for argv, out in (
        (["collect", "sft-resumable", *live, "-o"], tmp_path / "b.tgz"),
        (["report", "--bundle", str(examples), "--out"], tmp_path / "pm.md"),
    ):
        _theirs(out)
        refused = run_cli([*argv, str(out)])
        assert refused.rc == 3 and "--force" in refused.err and out.read_bytes() == b"theirs\n", refused.err
        forced = run_cli([*argv, str(out), "--force"])
        assert forced.rc == 0 and out.read_bytes() != b"theirs\n", forced.err
        assert _owner_and_mode(out) == (*OTHER, 0o640), argv[0]
    folder = tmp_path / "bundle"
    folder.mkdir()
    os.chown(folder, *OTHER)
    assert run_cli(["collect", "sft-resumable", *live, "-o", str(folder)]).rc == 0  # an empty folder may receive it
    assert {p.lstat().st_uid for p in [folder, *folder.rglob("*")]} == {OTHER[0]}
    manifest, flags = _fixable(tmp_path)
    os.chown(manifest, *OTHER)
    manifest.chmod(0o664)
    before = manifest.read_text()
    assert run_cli(["lint", str(manifest), "--fix", *flags]).rc in (0, 1)
    assert manifest.read_text() != before and _owner_and_mode(manifest) == (*OTHER, 0o664)

"""YAML and JSON from users: tags never construct objects, aliases never expand into a bomb, nesting is bounded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.clirun import run_cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "healthy-resume"

LAUGHS = "\n".join(
    ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: bomb, namespace: team-a}", "data:", '  a: &a ["lol","lol"]']
    + [f"  {chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]" for i in range(9)]
)


def _evil(marker: Path) -> str:
    return (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: evil, namespace: team-a}\ndata:\n"
        f'  x: !!python/object/apply:os.system ["touch {marker}"]\n'
        f"  y: !!python/object/new:pathlib.Path [{marker}]\n"
    )


@pytest.mark.parametrize("how", ["bundle", "lint"])
def test_tags_never_construct_objects(how: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    root = tmp_path / "b"
    shutil.copytree(EXAMPLE, root)
    (root / "evil.yaml").write_text(_evil(marker))
    argv = ["diagnose", "--bundle", str(root)] if how == "bundle" else ["lint", str(root / "evil.yaml")]
    got = run_cli(argv)
    assert not marker.exists()
    assert "Traceback" not in got.err
    if how == "bundle":
        assert got.rc == 3 and "could not determine a constructor" in got.err


@pytest.mark.parametrize("how", ["bundle", "lint"])
def test_an_alias_bomb_is_refused_without_expanding_it(how: str, tmp_path: Path) -> None:
    root = tmp_path / "b"
    shutil.copytree(EXAMPLE, root)
    (root / "bomb.yaml").write_text(LAUGHS + "\n")
    argv = ["diagnose", "--bundle", str(root)] if how == "bundle" else ["lint", str(root / "bomb.yaml")]
    got = run_cli(argv)
    assert "alias bomb" in got.err and "Traceback" not in got.err


def test_json_nested_past_the_recursion_limit_is_an_input_error(tmp_path: Path) -> None:
    root = tmp_path / "b"
    shutil.copytree(EXAMPLE, root)
    (root / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    got = run_cli(["diagnose", "--bundle", str(root)])
    assert got.rc == 3 and "nests too deeply" in got.err and "Traceback" not in got.err


def test_the_loaders_are_the_safe_ones() -> None:
    import yaml

    from ckpt_doctor import yamlio
    from ckpt_doctor.sources.manifests import rt_yaml

    assert yamlio._Loader in (yaml.SafeLoader, getattr(yaml, "CSafeLoader", None))
    doc = rt_yaml().load('x: !!python/object/apply:os.system ["echo hi"]\n')  # lint's round-trip loader
    assert list(doc["x"]) == ["echo hi"] and type(doc["x"]).__name__ == "CommentedSeq"  # data, with its tag kept


def _flow_configmap(entries: int) -> str:
    """A ConfigMap as one line of flow YAML (not JSON: its words are bare), `entries` items in its data."""
    data = ", ".join(["v"] * entries)
    return "{apiVersion: v1, kind: ConfigMap, metadata: {name: flow, namespace: team-a}, data: {k: [" + data + "]}}\n"


def test_a_one_line_flow_yaml_in_a_small_archive_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """The probe of issue 22: a 31 KB archive, a one-line flow-YAML ConfigMap of megabytes (no aliases), took
    seconds per megabyte and gigabytes of memory, and past 50 MB was called an alias bomb. No Kubernetes
    object has a line that long: the line is measured before any parsing."""
    import tarfile

    from ckpt_doctor.errors import InputError
    from ckpt_doctor.sources.bundle import open_bundle
    from ckpt_doctor.yamlio import MAX_LINE

    root = tmp_path / "b"
    shutil.copytree(EXAMPLE, root)
    line = _flow_configmap(MAX_LINE // 3 + 1)
    assert len(line) > MAX_LINE and line.count("\n") == 1
    (root / "flow.yaml").write_text(line)
    archive = tmp_path / "b.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(root, arcname="b")
    assert archive.stat().st_size < len(line) // 50  # small: the archive's ratio check does not apply
    with pytest.raises(InputError) as got, open_bundle(archive):
        pass
    assert "flow.yaml" in str(got.value) and f"a line of {len(line) - 1} characters" in got.value.message
    assert "alias" not in got.value.message


def test_nodes_are_counted_as_they_are_read_and_a_big_document_is_no_alias_bomb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ckpt_doctor import yamlio
    from ckpt_doctor.errors import InputError

    monkeypatch.setattr(yamlio, "MAX_NODES", 10_000)
    many = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: many}\ndata:\n" + "".join(
        f"  k{i}: v\n" for i in range(20_000)
    )
    with pytest.raises(InputError) as got:
        list(yamlio.iter_documents(many, "many.yaml"))
    assert "more than 10,000 nodes" in got.value.message and "alias" not in got.value.message
    with pytest.raises(InputError) as bomb:  # with aliases, it is an alias bomb, refused as one
        list(yamlio.iter_documents(LAUGHS, "bomb.yaml"))
    assert "alias bomb" in bomb.value.message
    assert list(yamlio.iter_documents("a: [1, 2]\n", "small.yaml")) == [{"a": [1, 2]}]


def test_reading_yaml_is_bounded_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from ckpt_doctor import yamlio
    from ckpt_doctor.errors import InputError

    monkeypatch.setattr(yamlio, "SECONDS_BASE", -1.0)  # a deadline already passed: the first look refuses
    monkeypatch.setattr(yamlio, "_CHECK_EVERY", 1)
    with pytest.raises(InputError) as got:
        list(yamlio.iter_documents("apiVersion: v1\nkind: ConfigMap\n", "slow.yaml"))
    assert "took longer than" in got.value.message

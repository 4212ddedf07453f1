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

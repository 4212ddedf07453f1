"""Generated docs stay current, and the findings schema copy matches the contract's."""

import json
from pathlib import Path

from ckpt_doctor.docs import render

ROOT = Path(__file__).resolve().parent.parent
SHARED_SCHEMA = ROOT.parent / "shared" / "design" / "findings.schema.json"


def test_rules_md_is_current() -> None:
    assert (ROOT / "docs" / "rules.md").read_text() == render(), "docs/rules.md is stale: run `make docs`"


def test_rules_index_is_current() -> None:
    from ckpt_doctor.commands.rules import index_text

    assert (ROOT / "rules" / "index.json").read_text() == index_text(), "rules/index.json is stale: run `make docs`"


def test_schema_copy_matches_contract() -> None:
    ours = json.loads((ROOT / "docs" / "findings.schema.json").read_text())
    if SHARED_SCHEMA.exists():
        assert ours == json.loads(SHARED_SCHEMA.read_text())
    assert ours["properties"]["schemaVersion"] == {"const": 1}


def test_readme_shows_what_make_demo_prints(tmp_path) -> None:
    """The quick start's output block is what `make demo` prints without a terminal, as it prints today: the
    drill on the sandbox's healthy job and on a broken one, and a diagnosis of another (run here with a playbook
    that polls faster; what is printed does not depend on it)."""
    import io

    from ckpt_doctor.sandbox import demo
    from ckpt_doctor.sandbox.cluster import Sandbox
    from tests.drill.conftest import playbook_file

    readme = (ROOT / "README.md").read_text()
    block = readme.split("`make demo` prints:\n\n```\n", 1)[1].split("```", 1)[0]
    assert "@$(BIN)/python -m ckpt_doctor.sandbox.demo" in (ROOT / "Makefile").read_text()
    out = io.StringIO()
    with Sandbox(speed=4.0) as sb:
        demo.unattended(out, sb.kubeconfig, playbook_file(tmp_path / "pb.yaml", timeout=60.0, poll=0.05))
    demo.how_to_open(out)
    assert out.getvalue() == block, out.getvalue()

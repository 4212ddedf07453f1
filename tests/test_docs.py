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


def test_readme_shows_what_make_demo_prints(monkeypatch) -> None:
    """The quick start's output block is the demo's diagnosis as it prints today (it had drifted: "run(s)",
    "34 passed")."""
    import re

    from tests.clirun import run_cli

    readme = (ROOT / "README.md").read_text()
    block = readme.split("`make demo` prints:\n\n```\n", 1)[1].split("```", 1)[0]
    head = "== ckpt-doctor diagnose --bundle "
    first, rest = block.split("\n", 1)
    assert first.startswith(head)
    bundle = first.removeprefix(head)
    make = (ROOT / "Makefile").read_text()
    assert f'@echo "{first}"' in make and f"diagnose --bundle {bundle};" in make  # the command the demo runs
    monkeypatch.chdir(ROOT)
    got = run_cli(["diagnose", "--bundle", bundle])
    assert got.rc == 1
    printed = re.sub(r"\x1b\[[0-9;]*m", "", got.out)
    assert rest.split("\n\nexit code", 1)[0].rstrip("\n") == printed.rstrip("\n")

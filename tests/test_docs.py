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

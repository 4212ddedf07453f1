"""Generated docs stay current, and the findings schema copy matches the contract's."""

import json
from pathlib import Path

from ckpt_doctor.docs import render

ROOT = Path(__file__).resolve().parent.parent


def _shared_design() -> Path | None:
    """The design folder beside the checkout (`../shared/design`), or beside its parent for a git worktree kept
    one level deeper (`wt/<name>`); None where the repository stands alone."""
    for base in (ROOT.parent, ROOT.parent.parent):
        d = base / "shared" / "design"
        if d.is_dir():
            return d
    return None


SHARED = _shared_design()
SHARED_SCHEMA = (SHARED or ROOT) / "findings.schema.json"


def test_rules_md_is_current() -> None:
    assert (ROOT / "docs" / "rules.md").read_text() == render(), "docs/rules.md is stale: run `make docs`"


def test_rules_index_is_current() -> None:
    from ckpt_doctor.commands.rules import index_text

    assert (ROOT / "rules" / "index.json").read_text() == index_text(), "rules/index.json is stale: run `make docs`"


def test_schema_copy_matches_contract() -> None:
    ours = json.loads((ROOT / "docs" / "findings.schema.json").read_text())
    if SHARED is not None:
        assert ours == json.loads(SHARED_SCHEMA.read_text()), "docs/findings.schema.json differs from the contract's"
    assert ours["properties"]["schemaVersion"] == {"const": 1}


def test_contracts_copy_is_the_contract() -> None:
    """docs/contracts.md ships the contracts users rely on; it is kept equal to the design's."""
    import pytest

    ours = (ROOT / "docs" / "contracts.md").read_text()
    assert "## 1. Commands" in ours and "### Exit codes" in ours
    if SHARED is None:
        pytest.skip("no ../shared/design beside this checkout: nothing to compare docs/contracts.md with")
    stale = "docs/contracts.md is stale: copy ../shared/design/contracts.md"
    assert ours == (SHARED / "contracts.md").read_text(), stale


def test_every_reference_to_the_contracts_points_at_the_shipped_copy() -> None:
    """The docs and `drill --help` named a contracts.md the repository did not ship: each mention is now a link
    to docs/contracts.md (or names that path)."""
    import re

    from tests.clirun import run_cli

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        if page.name == "contracts.md":
            continue
        text = page.read_text()
        for m in re.finditer(r"contracts\.md", text):
            link = re.search(r"\]\(([^)\s]*contracts\.md)(?:#[^)]*)?\)", text[max(0, m.start() - 60) : m.end() + 80])
            around = text[max(0, m.start() - 40) : m.end() + 20]
            assert link is not None, f"{page.name}: a bare mention of contracts.md: …{around}…"
            assert (page.parent / link.group(1)).resolve() == ROOT / "docs" / "contracts.md", (page.name, link.group(1))
    helptext = run_cli(["drill", "--help"]).out
    for m in re.finditer(r"contracts\.md", helptext):
        assert helptext[max(0, m.start() - 5) : m.start()] == "docs/", helptext


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

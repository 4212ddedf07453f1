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

"""The assistant faces say what the CLI says: the MCP tools' documents are byte for byte the CLI's documents, and
the analyzer gives a Result exactly when `diagnose` fails at or above --fail-on."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckpt_doctor.mcp import tools
from tests.clirun import run_cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["healthy-resume", "final-checkpoint-missing", "env-in-overrides-rejected", "lexical-sort-older"]


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_mcp_tools_give_the_clis_documents(example: str) -> None:
    bundle = str(ROOT / "examples" / example)
    s = tools.Settings()
    assert (
        tools.diagnose_trainjob(s, bundle=bundle)["findings"]
        == run_cli(["diagnose", "--bundle", bundle, "-o", "json"]).json()
    )
    linted = tools.lint_manifests(s, paths=[bundle])
    linted.pop("skipped")
    assert linted == run_cli(["lint", bundle, "-o", "json"]).json()
    assert tools.incident_report(s, bundle=bundle) == run_cli(["report", "--bundle", bundle, "-q"]).out
    listed = tools.list_trainjobs(s, bundle=bundle)
    fleet = run_cli(["diagnose", "--bundle", bundle, "--all", "-o", "json"]).json()
    assert listed["trainjobs"] == fleet["trainjobs"]


@pytest.mark.parametrize("example", EXAMPLES)
@pytest.mark.parametrize("fail_on", ["warning", "critical"])
def test_the_analyzer_reports_a_trainjob_exactly_when_diagnose_fails(example: str, fail_on: str) -> None:
    from ckpt_doctor.analyzer.results import result_of
    from ckpt_doctor.pipeline import diagnose_snapshot
    from ckpt_doctor.sources.bundle import open_bundle

    bundle = str(ROOT / "examples" / example)
    with open_bundle(bundle) as snap:
        result = result_of(diagnose_snapshot(snap), fail_on)
    rc = run_cli(["diagnose", "--bundle", bundle, "--fail-on", fail_on, "-q"]).rc
    assert (result is not None) == (rc == 1), (example, fail_on)
    if result is not None:
        failing = {
            f["rule"]
            for f in run_cli(["diagnose", "--bundle", bundle, "-o", "json"]).json()["findings"]
            if f["status"] == "fail"
        }
        assert {e.rule for e in result.errors} <= failing
        assert result.to_json()["name"] == "team-a/sft-resumable"

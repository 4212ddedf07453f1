"""Every example incident names its cause; the healthy one fails nothing; examples stay in sync."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from ckpt_doctor.cli import main
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.make_examples import write_all
from tests.stories import STORIES, Story

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "findings.schema.json").read_text())


@pytest.mark.parametrize("story", STORIES, ids=lambda s: s.name)
def test_example_verdict(story: Story) -> None:
    with open_bundle(ROOT / "examples" / story.name) as snap:
        diag = diagnose_snapshot(snap)
    failed = {f.rule.id for f in diag.failed()}
    assert failed == set(story.expect)
    if story.symptom:
        e = next(e for e in diag.verdict if e.symptom.rule.id == story.symptom)
        assert e.causes and e.causes[0].rule.id == story.cause, [c.rule.id for c in e.causes]
    for f in diag.failed():
        assert f.result.evidence
    jsonschema.validate(diag.to_json(), SCHEMA)


@pytest.mark.parametrize("story", STORIES, ids=lambda s: s.name)
def test_json_output_validates(story: Story, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["diagnose", "--bundle", str(ROOT / "examples" / story.name), "-o", "json"])
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    assert doc["mode"] == "diagnose" and doc["target"]["name"] == "sft-resumable"
    assert rc == (1 if story.expect else 0)
    order = [f["status"] for f in doc["findings"]]
    assert order == sorted(order, key={"fail": 0, "not_evaluated": 1, "pass": 2}.get)


def test_examples_match_generator(tmp_path: Path) -> None:
    write_all(tmp_path)
    for story in STORIES:
        ours = sorted(p.relative_to(tmp_path / story.name) for p in (tmp_path / story.name).rglob("*") if p.is_file())
        committed = ROOT / "examples" / story.name
        theirs = sorted(p.relative_to(committed) for p in committed.rglob("*") if p.is_file())
        assert ours == theirs, story.name
        for rel in ours:
            assert (tmp_path / story.name / rel).read_bytes() == (committed / rel).read_bytes(), f"{story.name}/{rel}"

"""The same incident with another surface gives the same findings (issue 10, metamorphic tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckpt_doctor.engine.consistency import contradictions
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.coverage.less_data import diagnose_dir
from tests.coverage.variants import VARIANTS, Variant, write_variant
from tests.stories import STORIES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CASES = [(s.name, v) for s in STORIES for v in VARIANTS]


@pytest.mark.parametrize(("example", "variant"), CASES, ids=[f"{e}-{v.name}" for e, v in CASES])
def test_a_surface_variant_gives_the_same_findings(example: str, variant: Variant, tmp_path: Path) -> None:
    before = diagnose_dir(EXAMPLES / example)
    after = diagnose_dir(write_variant(EXAMPLES / example, variant, tmp_path / "v"))
    changed = {k: (before.get(k), after.get(k)) for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed == {}


@pytest.mark.parametrize("example", [s.name for s in STORIES])
def test_findings_agree_with_each_other_and_the_timeline(example: str) -> None:
    with open_bundle(EXAMPLES / example) as snap:
        diag = diagnose_snapshot(snap)
    assert contradictions(diag) == []

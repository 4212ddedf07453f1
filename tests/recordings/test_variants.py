"""The recordings in another dress (tests/recordings/variants.py): the engine judges each variant exactly as it
judges the recording itself, the same misses and no new one, so what it reads does not hang on how a setup
writes its lines."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from tests.recordings.bundles import OUT, all_runs, bundle_id, write_bundle
from tests.recordings.judge import judge
from tests.recordings.variants import TRANSFORMS, hand_rolled, late_error, variant_run

MODEL = "jobset-kept"  # every attempt's pod and log kept: everything the logs say is judged
# one run per framework and version, and the partial saves for the structured records (kept small: each case
# writes and judges a bundle)
RUNS = [r for r in all_runs() if r["id"].endswith(("-correct-resume", "-partial-save"))]
CASES = [(r, name) for r in RUNS for name in TRANSFORMS
         if (r["scenario"] == "correct-resume" and name != "json-fields") or (name == "json-fields" and hand_rolled(r))]
# fmt: skip


@functools.cache
def _original(bundle: str) -> tuple[str, ...]:
    return tuple(judge(OUT / bundle)[0])


@pytest.mark.parametrize(("run", "name"), CASES, ids=[f"{r['id']}-{n}" for r, n in CASES])
def test_variant_is_judged_as_the_recording(run: dict, name: str, tmp_path: Path) -> None:
    v = variant_run(run, TRANSFORMS[name], tmp_path / "runs")
    got, _ = judge(write_bundle(v, MODEL, tmp_path / "bundles"))
    assert tuple(got) == _original(bundle_id(run, MODEL))


@pytest.mark.parametrize("run", [r for r in RUNS if r["scenario"] == "correct-resume"], ids=lambda r: r["id"])
def test_an_error_long_after_the_last_save_does_not_undo_it(run: dict, tmp_path: Path) -> None:
    """A killed attempt that printed an out-of-memory traceback after its last completed save keeps its saves."""
    v = variant_run(run, late_error, tmp_path / "runs")
    got, _ = judge(write_bundle(v, MODEL, tmp_path / "bundles"))
    assert tuple(got) == _original(bundle_id(run, MODEL))


def test_the_hand_rolled_recordings_have_structured_variants() -> None:
    assert {r["framework"] for r in RUNS if hand_rolled(r)} >= {"torch-dcp", "accelerate", "orbax"}

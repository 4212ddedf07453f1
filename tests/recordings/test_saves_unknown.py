"""An attempt whose log does not print every save has the rest read off the checkpoint listings, which show only what
survived until they were taken (Orbax's max_to_keep rotates the oldest away): the timeline says so
(`saves_unknown`) rather than pass the listed ones off as all of them; an attempt whose log prints its saves does
not (issue 19 §2)."""

from __future__ import annotations

import pytest

from ckpt_doctor.facts.timeline import timeline_of
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import OUT, all_runs, bundle_id

RUNS = [r for r in all_runs() if r["scenario"] in ("correct-resume", "dir-changes", "sigterm-no-handler")]


@pytest.mark.parametrize("run", RUNS, ids=[r["id"] for r in RUNS])
def test_saves_from_listings_say_they_may_be_short(run: dict) -> None:
    with open_bundle(OUT / bundle_id(run, "jobset-kept")) as snap:
        tl = timeline_of(diagnose_snapshot(snap).facts)
    for a in tl.attempts:
        if a.log is None:
            continue
        listed = any(s.source == "listing" for s in a.saves)
        assert bool(a.saves_unknown) == (listed or not a.saves), (a.index, a.saves_unknown, [s.source for s in a.saves])
        if run["framework"] in ("hf-trainer", "torch-dcp") and a.saves:
            assert not a.saves_unknown
        if run["framework"] in ("orbax", "lightning", "deepspeed") and a.saves:
            assert a.saves_unknown

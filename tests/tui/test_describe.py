"""`d`'s summaries: every object of every example describes, and odd shapes never raise."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ckpt_doctor.sources.bundle import open_bundle
from ckpt_doctor.tui.describe import DESCRIBERS, describe, events_of
from ckpt_doctor.tui.model import EventRow
from tests.tui.conftest import EXAMPLES

NOW = 1_800_000_000.0


def test_every_object_of_every_example_describes() -> None:
    seen: set[str] = set()
    for bundle in sorted(p for p in EXAMPLES.iterdir() if p.is_dir()):
        with open_bundle(bundle) as snap:
            for o in snap.objects:
                lines = describe(o.ref(), o.raw, [], NOW)
                assert lines[0].startswith("Name:") and lines[-1] == "  <none in the snapshot>"
                seen.add(o.kind)
    assert set(DESCRIBERS) - seen <= {"ClusterTrainingRuntime"}  # each describer ran on a real object


def test_events_are_matched_to_their_object_namespaced_or_not() -> None:
    ev = [
        EventRow("2026-11-30T08:00:00Z", "Warning", "FailedMount", "Pod/team-a/p", 3, "m"),
        EventRow("2026-11-30T08:00:00Z", "Normal", "Bound", "PersistentVolume//pv-1", 1, "b"),
    ]
    assert [e.reason for e in events_of("Pod/team-a/p", ev)] == ["FailedMount"]
    assert [e.reason for e in events_of("PersistentVolume/pv-1", ev)] == ["Bound"]
    assert events_of("Pod/team-b/p", ev) == []
    lines = describe("Pod/team-a/p", {"kind": "Pod", "metadata": {"name": "p"}}, ev, NOW)
    assert any("FailedMount" in x and "×3" in x for x in lines)


FIELDS = [
    *[
        "metadata",
        "spec",
        "status",
        "kind",
        "containers",
        "initContainers",
        "volumes",
        "conditions",
        "env",
        "name",
        "labels",
        "annotations",
    ],
    *[
        "state",
        "lastState",
        "containerStatuses",
        "terminated",
        "waiting",
        "exitCode",
        "accessModes",
        "capacity",
        "claimRef",
    ],
    *["failurePolicy", "replicatedJobs", "template", "trainer", "runtimeRef", "jobsStatus", "mlPolicy", "nodeAffinity"],
    *["ownerReferences", "creationTimestamp", "lastTransitionTime", "valueFrom", "volumeMounts", "resources", "limits"],
]
keys = st.sampled_from(FIELDS) | st.text(max_size=6)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None)
@given(kind=st.sampled_from([*DESCRIBERS, "ConfigMap"]), body=st.dictionaries(keys, json_values, max_size=5))
def test_odd_shapes_never_raise(kind: str, body: dict[str, Any]) -> None:
    raw = {**body, "kind": kind}
    lines = describe(f"{kind}/ns/x", raw, [], NOW)
    assert isinstance(lines, list)

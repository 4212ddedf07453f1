"""A field of the wrong type never crashes a run nor hides a critical finding (issue 9, typed reading).

For a sampled single-field mutation of an example bundle (any field the rules read, given a value
of another type): no traceback, an exit code in {0, 1, 3, 4}, JSON that validates, and every
critical finding that failed before still fails, or is `not_evaluated` naming the mutated field.
`bench/bench_mutations.py` runs every mutation of every example.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.clirun import run_cli
from tests.coverage.less_data import read_objects
from tests.coverage.mutation import Mutation, current, dotted, other_values, sites, write_mutated
from tests.stories import STORIES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SCHEMA = json.loads((ROOT / "docs" / "findings.schema.json").read_text())


@cache
def _sites(example: str) -> list[tuple[int, tuple[Any, ...]]]:
    return sites(EXAMPLES / example)


@cache
def _baseline(example: str) -> dict[str, Any]:
    got = run_cli(["diagnose", "--bundle", str(EXAMPLES / example), "-o", "json"])
    return got.json()


@st.composite
def mutations(draw: st.DrawFn) -> tuple[str, Mutation]:
    example = draw(st.sampled_from([s.name for s in STORIES]))
    target, path = draw(st.sampled_from(_sites(example)))
    value = draw(st.sampled_from(other_values(current(EXAMPLES / example, target, path))))
    return example, Mutation(target, path, value)


def check_mutation(example: str, m: Mutation, tmp: Path) -> None:
    bundle = write_mutated(EXAMPLES / example, m, tmp)
    got = run_cli(["diagnose", "--bundle", str(bundle), "-o", "json"])
    what = m.describe(read_objects(EXAMPLES / example))
    assert "Traceback" not in got.err and "internal error" not in got.err, (what, got.err)
    assert got.rc in (0, 1, 3, 4), (what, got.rc, got.err)
    if got.rc == 3:  # the input itself became unusable (no TrainJob left): one line, nothing on stdout
        assert got.out == "" and got.err.count("\n") == 1, (what, got.err)
        return
    doc = got.json()
    jsonschema.validate(doc, SCHEMA)
    field = dotted(m.path)
    now = {f["rule"]: f for f in doc["findings"]}
    for f in _baseline(example)["findings"]:
        if f["status"] != "fail" or f["severity"] != "critical":
            continue
        g = now[f["rule"]]
        assert g["status"] == "fail" or (g["status"] == "not_evaluated" and _names(g["reason"], field, m)), (
            what,
            f["rule"],
            g,
        )


def _names(reason: str, field: str, m: Mutation) -> bool:
    """The reason names the mutated field (or, for a list item, the list it sits in)."""
    if m.target < 0:
        return "bundle.yaml" in reason
    parents = [field] + [field[:i] for i in range(len(field)) if field[i] in ".["]
    return any(p and p in reason for p in parents)


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(mutations())
def test_a_malformed_field_never_crashes_nor_hides_a_critical_finding(tmp_path_factory: Any, case: Any) -> None:
    example, m = case
    check_mutation(example, m, tmp_path_factory.mktemp("m") / "b")


def test_known_crashers_from_the_issue(tmp_path: Path) -> None:
    """The shapes the issue's mutation sweep found: each degrades to not_evaluated, never a traceback."""
    objs = read_objects(EXAMPLES / "emptydir-fresh-start")
    idx = {o["kind"]: i for i, o in reversed(list(enumerate(objs)))}
    cases = [
        Mutation(idx["TrainJob"], ("spec", "trainer", "numNodes"), "2"),
        Mutation(idx["Pod"], ("status", "containerStatuses"), 7),
        Mutation(idx["Pod"], ("metadata", "labels"), ["a", "b"]),
        Mutation(idx["Pod"], ("spec", "volumes"), True),
        Mutation(idx["Pod"], ("metadata", "ownerReferences"), 7),
        Mutation(-1, ("cluster",), -1),
    ]
    for i, m in enumerate(cases):
        check_mutation("emptydir-fresh-start", m, tmp_path / str(i))

"""The catalogue is whole: the graph validates, the guide's eight rows are covered."""

from __future__ import annotations

import dataclasses

import pytest

from ckpt_doctor.engine.catalogue import default_rules
from ckpt_doctor.engine.checks import load_checks
from ckpt_doctor.engine.graph import CatalogueError, build_graph, explaining


def test_graph_is_valid_and_every_rule_has_a_check() -> None:
    g = build_graph(default_rules(), load_checks())
    assert g.number_of_nodes() == len(default_rules())
    for r in default_rules():
        if r.kind == "cause":
            assert r.explains, f"cause {r.id} explains no symptom"
    assert "missing-ancestor-label" in explaining(g, "fresh-start-after-restart")


def test_guide_troubleshooting_rows_are_all_covered() -> None:
    rows = {r.guide_row for r in default_rules() if r.guide_row}
    assert rows == set(range(1, 9))
    for row in range(1, 9):
        kinds = {r.kind for r in default_rules() if r.guide_row == row}
        assert "cause" in kinds, f"guide row {row} has no cause rule"


def test_validation_catches_cycles_dangling_edges_and_missing_checks() -> None:
    rules = list(default_rules())
    sym = next(r for r in rules if r.id == "fresh-start-after-restart")
    bad_sym = dataclasses.replace(sym, explains=("ckpt-dir-not-persistent",))
    with pytest.raises(CatalogueError, match="cannot explain a cause"):
        build_graph([bad_sym if r is sym else r for r in rules], load_checks())
    cause = next(r for r in rules if r.id == "no-failure-policy")
    dangling = dataclasses.replace(cause, explains=("no-such-symptom",))
    with pytest.raises(CatalogueError, match="unknown rule no-such-symptom"):
        build_graph([dangling if r is cause else r for r in rules], load_checks())
    with pytest.raises(CatalogueError, match="has no check"):
        build_graph([*rules, dataclasses.replace(cause, id="brand-new-rule")], load_checks())
    a = dataclasses.replace(cause, id="cause-a", explains=("cause-b",), kind="cause")
    b = dataclasses.replace(cause, id="cause-b", explains=("cause-a",), kind="cause")
    with pytest.raises(CatalogueError, match="cycle"):
        build_graph([a, b])


def test_every_rule_says_what_it_reads_and_how_sure_it_can_be() -> None:
    """docs/rules.md tells, for each rule, what it reads and how confident it can be (issue 10)."""
    from ckpt_doctor.engine.catalogue import default_rules

    for r in default_rules():
        assert r.reads, f"{r.id} has no reads:"
        assert len(r.confidence) > 20, f"{r.id} has no confidence:"

"""The findings' paths in the rule graph, walked without networkx, are the ones networkx gives."""

from __future__ import annotations

import itertools

import networkx as nx

from ckpt_doctor.engine.catalogue import default_rules
from ckpt_doctor.engine.checks import load_checks
from ckpt_doctor.engine.graph import build_graph
from ckpt_doctor.engine.walk import STATUS_ORDER
from ckpt_doctor.tui.model import _rule_links, _shortest_path, graph_paths


def networkx_paths(g: nx.DiGraph, rule_id: str, kind: str, status: dict[str, str]) -> list[list[tuple[str, str]]]:
    """What the app computed with networkx before (the reference)."""
    paths = []
    others = nx.ancestors(g, rule_id) if kind == "symptom" else nx.descendants(g, rule_id)
    for other in sorted(others):
        if kind == "symptom" and g.nodes[other]["kind"] != "cause":
            continue
        src, dst = (other, rule_id) if kind == "symptom" else (rule_id, other)
        paths.append([(n, status.get(n, "not_evaluated")) for n in nx.shortest_path(g, src, dst)])
    rank = STATUS_ORDER
    paths.sort(key=lambda p: (max(rank[s] for _, s in p), [rank[s] for _, s in p], [n for n, _ in p]))
    return paths


def test_every_rule_s_paths_are_networkx_s() -> None:
    rules = list(default_rules())
    g = build_graph(rules, load_checks())
    statuses = ["fail", "pass", "not_evaluated"]
    for i, r in enumerate(rules):
        status = {x.id: statuses[(i + j) % 3] for j, x in enumerate(rules)}  # a different mix per rule
        assert graph_paths(r.id, r.kind, status) == networkx_paths(g, r.id, r.kind, status), r.id
    assert graph_paths("no-such-rule", "cause", {}) == []


def test_the_shortest_path_is_networkx_s_of_several() -> None:
    g = nx.DiGraph()  # diamonds and a longer detour: several shortest paths, one chosen
    g.add_edges_from([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "e"), ("a", "x"), ("x", "y"), ("y", "e")])
    g.add_edges_from([("c", "f"), ("b", "f"), ("f", "e")])
    succ = {n: list(g.succ[n]) for n in g}
    pred = {n: list(g.pred[n]) for n in g}
    for s, t in itertools.permutations(g.nodes, 2):
        if nx.has_path(g, s, t):
            assert _shortest_path(succ, pred, s, t) == nx.shortest_path(g, s, t), (s, t)


def test_the_links_are_the_catalogue_s_graph() -> None:
    g = build_graph(list(default_rules()), load_checks())
    kinds, succ, pred = _rule_links()
    assert kinds == {n: g.nodes[n]["kind"] for n in g}
    assert succ == {n: list(g.succ[n]) for n in g} and pred == {n: list(g.pred[n]) for n in g}

"""The rule graph: causes → the symptoms they explain, held in networkx."""

from __future__ import annotations

import json
from collections.abc import Iterable

import networkx as nx

from ckpt_doctor.engine.model import Rule


class CatalogueError(Exception):
    pass


def build_graph(rules: Iterable[Rule], checks: Iterable[str] | None = None) -> nx.DiGraph:
    """Validate the catalogue and return its DAG (edge cause → symptom)."""
    rules = list(rules)
    g = nx.DiGraph()
    by_id = {r.id: r for r in rules}
    for r in rules:
        g.add_node(r.id, kind=r.kind, severity=r.severity, title=r.title)
    problems = []
    for r in rules:
        for target in r.explains:
            if target not in by_id:
                problems.append(f"{r.id} explains unknown rule {target}")
                continue
            g.add_edge(r.id, target)
        for s in r.specific:
            if s not in by_id:
                problems.append(f"{r.id} names unknown specific cause {s}")
        if r.kind == "symptom" and r.explains and any(by_id.get(t) and by_id[t].kind == "cause" for t in r.explains):
            problems.append(f"symptom {r.id} cannot explain a cause")
    if checks is not None:
        have = set(checks)
        problems += [f"rule {r.id} has no check" for r in rules if r.id not in have]
        problems += [f"check {c} has no rule" for c in sorted(have - set(by_id))]
    if not nx.is_directed_acyclic_graph(g):
        cycle = nx.find_cycle(g)
        problems.append("the rule graph has a cycle: " + " -> ".join(a for a, _ in cycle))
    if problems:
        raise CatalogueError("; ".join(problems))
    return g


def explaining(g: nx.DiGraph, symptom: str) -> list[str]:
    """Causes with a path to `symptom` (direct or through an intermediate symptom)."""
    return sorted(n for n in nx.ancestors(g, symptom) if g.nodes[n]["kind"] == "cause")


def explaining_table(g: nx.DiGraph) -> dict[str, list[str]]:
    """`explaining` for every symptom: what a diagnosis needs of the graph, stored in
    rules/index.json for the default catalogue (see engine/walk.py)."""
    return {n: explaining(g, n) for n in sorted(g.nodes) if g.nodes[n]["kind"] == "symptom"}


def to_mermaid(g: nx.DiGraph) -> str:
    lines = ["graph LR"]
    for n, data in sorted(g.nodes(data=True)):
        shape = ("([", "])") if data["kind"] == "symptom" else ("[", "]")
        lines.append(f'  {_mid(n)}{shape[0]}"{n}"{shape[1]}')
    for a, b in sorted(g.edges()):
        lines.append(f"  {_mid(a)} --> {_mid(b)}")
    return "\n".join(lines) + "\n"


def to_text(g: nx.DiGraph) -> str:
    """Each symptom with the causes that explain it (directly, ← ; through another cause, ⇠), for reading."""
    lines = []
    for n, data in sorted(g.nodes(data=True)):
        if data["kind"] != "symptom":
            continue
        lines.append(n)
        direct = sorted(g.predecessors(n))
        lines += [f"  ← {c}" for c in direct]
        lines += [f"  ⇠ {c}" for c in sorted(nx.ancestors(g, n) - set(direct))]
    alone = sorted(n for n, data in g.nodes(data=True) if data["kind"] != "symptom" and not g.out_degree(n))
    if alone:
        lines += ["", "causes that explain no symptom of the catalogue:", *(f"  {c}" for c in alone)]
    return "\n".join(lines) + "\n"


def _mid(n: str) -> str:
    return n.replace("-", "_")


def to_dot(g: nx.DiGraph) -> str:
    lines = ["digraph rules {", "  rankdir=LR;"]
    for n, data in sorted(g.nodes(data=True)):
        shape = "ellipse" if data["kind"] == "symptom" else "box"
        lines.append(f'  "{n}" [shape={shape}];')
    for a, b in sorted(g.edges()):
        lines.append(f'  "{a}" -> "{b}";')
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_json(g: nx.DiGraph) -> str:
    return json.dumps(nx.node_link_data(g, edges="edges"), indent=2, sort_keys=True) + "\n"

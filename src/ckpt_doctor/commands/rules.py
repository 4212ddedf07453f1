"""`ckpt-doctor rules`: the catalogue and its graph."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ckpt_doctor.errors import UsageError

INDEX = "index.json"  # `rules list` reads this summary of the catalogue (made by `make docs`)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rules", help="list, show or graph the rule catalogue")
    rs = p.add_subparsers(dest="rules_cmd", metavar="list|show|graph")
    lp = rs.add_parser("list", help="one line per rule")
    lp.add_argument("-o", "--output", choices=("text", "json"), default="text")
    sp = rs.add_parser("show", help="everything about one rule")
    sp.add_argument("id")
    sp.add_argument("-o", "--output", choices=("text", "json"), default="text")
    gp = rs.add_parser("graph", help="the rule graph (causes → symptoms)")
    gp.add_argument("-o", "--output", choices=("mermaid", "dot", "json", "text"), default="mermaid")
    p.set_defaults(func=run, rules_cmd=None)


def index_text() -> str:
    """rules/index.json: every rule as `rules list -o json` prints it, and what a diagnosis needs
    of the rule graph (the causes that explain each symptom), computed here with networkx, for
    the catalogue whose files have `digest` (a diagnosis checks it before it trusts the table)."""
    from ckpt_doctor.engine.catalogue import default_digest, default_rules
    from ckpt_doctor.engine.checks import load_checks
    from ckpt_doctor.engine.graph import build_graph, explaining_table

    rules = default_rules()
    index = {
        "digest": default_digest(),
        "rules": [r.to_json() for r in rules],
        "explaining": explaining_table(build_graph(rules, load_checks())),
    }
    return json.dumps(index, indent=2) + "\n"


def _listed() -> list[dict[str, Any]]:
    """The catalogue's summary, read without loading the engine (a test keeps it current)."""
    from ckpt_doctor.data import rules_dir

    try:
        index = json.loads((rules_dir() / INDEX).read_text())
    except (OSError, ValueError):  # an installation without it: read the catalogue itself
        index = json.loads(index_text())
    return index["rules"]


def run(args: argparse.Namespace) -> int:
    cmd = args.rules_cmd or "list"
    out = sys.stdout
    if cmd == "list":
        listed = _listed()
        if getattr(args, "output", "text") == "json":
            out.write(json.dumps(listed, indent=2) + "\n")
            return 0
        width = max(len(r["id"]) for r in listed)
        for kind in ("symptom", "cause"):
            out.write(f"{kind.upper()}S\n")
            for r in sorted((r for r in listed if r["kind"] == kind), key=lambda r: r["id"]):
                out.write(f"  {r['id']:<{width}}  {r['severity']:<8}  {r['title']}\n")
        return 0
    from ckpt_doctor.engine.catalogue import default_rules
    from ckpt_doctor.engine.checks import load_checks
    from ckpt_doctor.engine.graph import build_graph, to_dot, to_json, to_mermaid, to_text

    rules = list(default_rules())
    if cmd == "show":
        r = next((r for r in rules if r.id == args.id), None)
        if r is None:
            raise UsageError(f"no rule {args.id!r}; `ckpt-doctor rules list` shows them")
        if args.output == "json":
            out.write(json.dumps(r.to_json(), indent=2) + "\n")
            return 0
        g = build_graph(rules, load_checks())
        explained_by = sorted(g.predecessors(r.id))
        out.write(f"{r.id}  ({r.kind}, {r.severity})\n{r.title}\n\n{r.explanation}\n\nFix: {r.fix}\n")
        if r.explains:
            out.write(f"Explains: {', '.join(r.explains)}\n")
        if explained_by:
            out.write(f"Explained by: {', '.join(explained_by)}\n")
        if r.needs:
            out.write(f"Needs: {', '.join(r.needs)}\n")
        if r.params:
            out.write(f"Parameters: {json.dumps(r.params)}\n")
        for d in r.docs:
            out.write(f"Docs: {d}\n")
        return 0
    g = build_graph(rules, load_checks())
    out.write({"mermaid": to_mermaid, "dot": to_dot, "json": to_json, "text": to_text}[args.output](g))
    return 0

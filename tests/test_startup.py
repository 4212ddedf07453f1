"""What `--help` and `rules list` load: the command line only, never the engine, networkx or
ruamel (their cost is measured in bench/bench_startup.py; here, which modules load is the proof).
Each check runs in a fresh interpreter: its `sys.modules` is the only honest witness."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ["networkx", "ruamel.yaml", "ckpt_doctor.engine", "ckpt_doctor.pipeline", "ckpt_doctor.facts", "textual"]
HEAVY += ["kubernetes", "ckpt_doctor.sources.bundle", "ckpt_doctor.lint", "tree_sitter", "re2"]
HEAVY += ["mcp", "mcp_types", "pydantic", "grpc", "google.protobuf"]  # only `mcp` and `analyzer` load them


def loaded(argv: list[str]) -> dict[str, bool]:
    script = (
        "import contextlib, io, json, sys\n"
        "from ckpt_doctor.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["rules", "list"],
        ["rules", "list", "-o", "json"],
        ["diagnose", "--help"],
        ["lint", "--help"],
        ["mcp", "--help"],
        ["analyzer", "--help"],
    ],
)
def test_help_and_rules_list_load_no_engine(argv: list[str]) -> None:
    got = loaded(argv)
    assert not any(got.values()), {m: v for m, v in got.items() if v}


def test_rules_list_says_what_the_catalogue_says(capsys: pytest.CaptureFixture[str]) -> None:
    from ckpt_doctor.cli import main
    from ckpt_doctor.engine.catalogue import default_rules

    assert main(["rules", "list", "-o", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in listed] == [r.id for r in default_rules()]


def test_a_diagnosis_needs_no_networkx_when_the_index_matches_the_catalogue() -> None:
    script = (
        "import contextlib, io, sys\n"
        "from ckpt_doctor.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['diagnose', '--bundle', 'examples/healthy-resume', '-o', 'json'])\n"
        "print('networkx' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "False", out.stderr


def test_the_stored_table_and_the_graph_give_the_same_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every example, walked with rules/index.json's table and with a graph built by networkx;
    and with a stale digest the table is not trusted (the graph is built)."""
    from ckpt_doctor.engine import walk
    from ckpt_doctor.engine.catalogue import default_rules
    from ckpt_doctor.engine.checks import load_checks
    from ckpt_doctor.engine.graph import build_graph
    from ckpt_doctor.pipeline import diagnose_snapshot
    from ckpt_doctor.sources.bundle import open_bundle

    assert walk._stored_explainer() is not None
    g = build_graph(default_rules(), load_checks())

    def shape(d: walk.Diagnosis) -> list[tuple[str, list[str], list[str]]]:
        return [(e.symptom.rule.id, [c.rule.id for c in e.causes], e.unexplored) for e in d.verdict]

    for example in sorted(p for p in (ROOT / "examples").iterdir() if p.is_dir()):
        with open_bundle(example) as snap:
            stored = diagnose_snapshot(snap)
            built = walk.evaluate(stored.facts, graph=g)
        assert shape(stored) == shape(built), example.name
        assert [f.rule.id for f in stored.latent] == [f.rule.id for f in built.latent], example.name
    monkeypatch.setattr(walk, "default_digest", lambda: "stale")
    assert walk._stored_explainer() is None

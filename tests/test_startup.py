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
    "argv", [["--help"], ["rules", "list"], ["rules", "list", "-o", "json"], ["diagnose", "--help"], ["lint", "--help"]]
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

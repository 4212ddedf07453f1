"""Import boundaries: the engine is free of UI and cluster code (architecture.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "ckpt_doctor"
IMPORT = re.compile(r"^\s*(?:import|from)\s+(kubernetes|textual)\b", re.M)


def test_only_the_live_client_imports_kubernetes_and_only_the_tui_imports_textual() -> None:
    offenders = []
    for f in SRC.rglob("*.py"):
        rel = f.relative_to(SRC).as_posix()
        for m in IMPORT.finditer(f.read_text()):
            if m.group(1) == "kubernetes" and rel != "sources/live/client.py":
                offenders.append(f"{rel}: kubernetes")
            if m.group(1) == "textual" and not rel.startswith("tui/"):
                offenders.append(f"{rel}: textual")
    assert not offenders, offenders


def test_diagnosing_a_bundle_loads_neither_kubernetes_nor_textual() -> None:
    example = SRC.parent.parent / "examples" / "healthy-resume"
    code = (
        "import sys; from ckpt_doctor.cli import main;"
        "rc = main(['diagnose', '--bundle', sys.argv[1], '-o', 'json']);"
        "bad = sorted({m.split('.')[0] for m in sys.modules} & {'kubernetes', 'textual'});"
        "sys.stderr.write(repr(bad)); sys.exit(9 if bad else rc)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(example)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-500:]


def test_the_sandbox_imports_no_other_face() -> None:
    """The sandbox is a face of its own (architecture.md): it may use the engine's readers, never the app, the
    drill, the commands, the watcher or the reports; its demo runs those as `ckpt-doctor` subprocesses."""
    faces = re.compile(r"^\s*(?:import|from)\s+ckpt_doctor\.(tui|drill|commands|watch|report|fleet|mcp)\b", re.M)
    offenders = [f"{f.relative_to(SRC)}: {m.group(1)}" for f in (SRC / "sandbox").rglob("*.py")
                 for m in faces.finditer(f.read_text())]
    assert not offenders, offenders

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
        "bad = sorted({m.split('.')[0] for m in sys.modules} & {'kubernetes', 'textual', 'mcp', 'grpc'});"
        "sys.stderr.write(repr(bad)); sys.exit(9 if bad else rc)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(example)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-500:]


SDK_IMPORT = re.compile(r"^\s*(?:import|from)\s+(mcp|mcp_types|grpc|google\.protobuf)\b", re.M)
SDK_HOMES = {
    "mcp": ("mcp/server.py", "mcp/prompts.py"),  # prompts.py: for type checking only
    "mcp_types": ("mcp/server.py",),
    "grpc": ("analyzer/server.py", "analyzer/k8sgpt_schema_pb2_grpc.py"),
    "google.protobuf": ("analyzer/k8sgpt_schema_pb2.py",),
}
FACE_IMPORT = re.compile(r"^\s*(?:import|from)\s+ckpt_doctor\.(commands|tui|watch|drill|mcp|analyzer)\b", re.M)


def test_the_assistant_faces_import_no_other_face_and_only_they_load_their_protocol_libraries() -> None:
    offenders = []
    for f in SRC.rglob("*.py"):
        rel = f.relative_to(SRC).as_posix()
        text = f.read_text()
        for m in SDK_IMPORT.finditer(text):
            if rel not in SDK_HOMES[m.group(1)]:
                offenders.append(f"{rel}: {m.group(1)}")
        face = rel.split("/", 1)[0]
        if face in ("mcp", "analyzer"):
            offenders += [f"{rel}: ckpt_doctor.{m.group(1)}" for m in FACE_IMPORT.finditer(text) if m.group(1) != face]
    assert not offenders, offenders


def test_the_sandbox_imports_no_other_face() -> None:
    """The sandbox is a face of its own (architecture.md): it may use the engine's readers, never the app, the
    drill, the commands, the watcher or the reports; its demo runs those as `ckpt-doctor` subprocesses."""
    faces = re.compile(r"^\s*(?:import|from)\s+ckpt_doctor\.(tui|drill|commands|watch|report|fleet|mcp)\b", re.M)
    offenders = [f"{f.relative_to(SRC)}: {m.group(1)}" for f in (SRC / "sandbox").rglob("*.py")
                 for m in faces.finditer(f.read_text())]
    assert not offenders, offenders

"""Shared helpers for the lint, fix, explain-error, SARIF and JUnit tests."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.clirun import run_cli

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
REPO = HERE.parent.parent
FINDINGS_SCHEMA = REPO / "docs" / "findings.schema.json"  # tests/test_docs.py keeps it equal to the contract's
SARIF_SCHEMA = HERE / "schemas" / "sarif-schema-2.1.0.json"
GOOD = ("v2.0", "v2.1", "v2.3")


@dataclass
class Expected:
    rule: str
    file: str
    line: int


@dataclass
class Variant:
    """A broken (or framework) variant: the good set of a version with some files replaced."""

    name: str
    base: str
    dir: Path
    flags: list[str]
    expect_raw: list[dict[str, Any]]

    @property
    def id(self) -> str:
        return f"{self.base}/{self.dir.name}" if self.dir.parent.name == "broken" else f"frameworks/{self.dir.name}"

    def files(self) -> list[Path]:
        return sorted(p for p in self.dir.iterdir() if p.name != "expect.yaml")

    def materialize(self, tmp: Path) -> Path:
        dst = tmp / "manifests"
        shutil.copytree(FIXTURES / self.base / "good", dst)
        for f in self.files():
            shutil.copy(f, dst / f.name)
        return dst

    def expected(self, root: Path) -> list[Expected]:
        out = []
        for e in self.expect_raw:
            line = e.get("line")
            if line is None:
                text = (root / e["file"]).read_text().splitlines()
                hits = [i for i, ln in enumerate(text, 1) if e["at"] in ln]
                assert hits, f"{self.id}: {e['at']!r} not in {e['file']}"
                line = hits[0]
            out.append(Expected(e["rule"], e["file"], int(line)))
        return out

    @property
    def version_flag(self) -> str | None:
        return self.flags[self.flags.index("--trainer-version") + 1] if "--trainer-version" in self.flags else None


def load_variants() -> list[Variant]:
    out = []
    dirs = sorted(FIXTURES.glob("v*/broken/*")) + sorted(FIXTURES.glob("frameworks/*"))
    for d in dirs:
        exp = YAML(typ="safe").load((d / "expect.yaml").read_text()) or {}
        base = exp.get("base") or d.parent.parent.name
        out.append(Variant(d.name, base, d, list(exp.get("flags") or []), list(exp.get("expect") or [])))
    return out


VARIANTS = load_variants()


def variant(name: str) -> Variant:
    """The variant whose id is NAME (e.g. "v2.1/grace-period")."""
    return next(v for v in VARIANTS if v.id == name)


def findings_schema() -> dict[str, Any]:
    return json.loads(FINDINGS_SCHEMA.read_text())


@pytest.fixture
def cli():
    """Run the CLI in-process: returns (exit code, stdout, stderr)."""
    return lambda *args: run_cli(args)

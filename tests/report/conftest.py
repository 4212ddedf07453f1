"""Example bundles diagnosed once per session for the report tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckpt_doctor.engine.walk import Diagnosis
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import load_bundle

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
NAMES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "bundle.yaml").exists())
_cache: dict[str, Diagnosis] = {}


def diagnosis(name: str) -> Diagnosis:
    if name not in _cache:
        _cache[name] = diagnose_snapshot(load_bundle(EXAMPLES / name))
    return _cache[name]


def diagnose_dir(path: Path) -> Diagnosis:
    return diagnose_snapshot(load_bundle(path))


@pytest.fixture(scope="session")
def examples() -> list[str]:
    return NAMES

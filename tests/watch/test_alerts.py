"""`promtool test rules`: the alert rules of deploy/ fire when they should, and only then."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_alert_rules_unit_tests(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    shutil.copy(ROOT / "deploy" / "prometheus" / "ckpt-doctor.rules.yml", tmp_path)
    shutil.copy(Path(__file__).with_name("alerts_test.yaml"), tmp_path)
    got = subprocess.run([promtool, "test", "rules", "alerts_test.yaml"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert got.returncode == 0, got.stdout + got.stderr

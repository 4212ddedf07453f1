"""A non-editable install carries rules/ and playbooks/, and loads them from the wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_carries_data_and_loads_from_it(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("ckpt_doctor-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for rule_file in (ROOT / "rules").glob("*.yaml"):
        assert f"ckpt_doctor/_data/rules/{rule_file.name}" in names
    assert "ckpt_doctor/_data/rules/signatures/hf-trainer.yaml" in names
    assert "ckpt_doctor/_data/playbooks/verify-resume.yaml" in names
    for scenario in (ROOT / "src" / "ckpt_doctor" / "sandbox" / "scenarios").glob("*.yaml"):  # the sandbox's
        assert f"ckpt_doctor/sandbox/scenarios/{scenario.name}" in names
    # the recordings of real framework runs, which the sandbox replays
    assert "ckpt_doctor/_data/recordings/README.md" in names
    assert "ckpt_doctor/_data/recordings/hf-4.57-correct-resume/run.yaml" in names
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import ckpt_doctor.data as d, ckpt_doctor.engine.catalogue as c, ckpt_doctor.sandbox.scenarios as s;"
        f"assert str(d.rules_dir()).startswith({str(site)!r}), d.rules_dir();"
        "assert all(x.manifests() for x in s.SCENARIOS);"
        f"assert str(d.recordings_dir()).startswith({str(site)!r}), d.recordings_dir();"
        "print(len(c.load_rules()))"
    )
    # PYTHONPATH comes before site-packages, so the extracted wheel shadows the editable install
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) >= 34

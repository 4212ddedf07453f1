"""`lint` over a bundle's folder: its bundle.yaml is the bundle's metadata, not an object to lint, and it says which
Trainer version the cluster ran (as for `diagnose --bundle`), instead of a note that nothing shows the version."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.clirun import run_cli

ROOT = Path(__file__).resolve().parents[2]
TOLD = sorted(
    d
    for d in (ROOT / "examples").iterdir()
    if (d / "bundle.yaml").is_file()
    and ((yaml.safe_load((d / "bundle.yaml").read_text()) or {}).get("cluster") or {}).get("trainerVersion")
)


def test_there_are_some() -> None:
    assert len(TOLD) >= 5


@pytest.mark.parametrize("bundle", TOLD, ids=[d.name for d in TOLD])
def test_lint_reads_the_version_bundle_yaml_gives(bundle: Path) -> None:
    told = str(yaml.safe_load((bundle / "bundle.yaml").read_text())["cluster"]["trainerVersion"])
    got = run_cli(["lint", str(bundle), "-o", "json"])
    doc = got.json()
    assert doc["trainerVersionSource"] == "bundle" and told.startswith(doc["trainerVersion"]), doc["trainerVersion"]
    assert "bundle.yaml" not in got.err and "shows the Trainer version" not in got.err, got.err


def test_the_flag_still_says_which(tmp_path: Path) -> None:
    bundle = TOLD[0]
    doc = run_cli(["lint", str(bundle), "-o", "json", "--trainer-version", "v2.0"]).json()
    assert (doc["trainerVersion"], doc["trainerVersionSource"]) == ("v2.0", "flag")

"""The sandbox under test: `Sandbox` started in-process (the Python API), at the tests' pace (speed 1: two hundred
training steps a second), four times faster still (a grace period of 120 s lasts 0.3 s), and the drill's test
playbook."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ckpt_doctor.sandbox.cluster import Sandbox
from tests.drill.conftest import playbook_file


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """Every scenario in one simulated cluster, shared by a module's tests (each drill undoes what it did)."""
    with Sandbox(speed=4.0) as sb:
        yield sb
        assert sb.errors() == [], sb.errors()[0]


@pytest.fixture(scope="module")
def playbook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return playbook_file(tmp_path_factory.mktemp("playbook") / "playbook.yaml")

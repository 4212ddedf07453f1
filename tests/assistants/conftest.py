from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.assistants.cluster import LiveCluster, live_cluster


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCluster]:
    """The live cluster every test of the assistant faces reads (tests/assistants/cluster.py)."""
    with live_cluster(tmp_path_factory.mktemp("assistants")) as c:
        yield c

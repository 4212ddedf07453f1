"""How every face knows it is talking to the sandbox, a simulated cluster (`ckpt-doctor sandbox`).

The sandbox's API server reports a `gitVersion` with build metadata (`v1.33.1+ckpt-doctor-sandbox`), the way
distributions mark theirs (`v1.29.3+k3s1`). The live collector keeps the server version in the snapshot
(`bundle.yaml` `cluster.serverVersion`), so a diagnosis, a report, the app, a bundle collected from it and the
drill all read the same marker, and say `sandbox (simulated cluster)` where they name the cluster.
"""

from __future__ import annotations

from typing import Any

MARK = "+ckpt-doctor-sandbox"
WORDS = "sandbox (simulated cluster)"


def server_version(base: str = "v1.33.1") -> str:
    """The version the sandbox reports."""
    return base + MARK


def simulated(server_version: str | None) -> bool:
    return bool(server_version) and MARK in str(server_version)


def simulated_meta(meta: dict[str, Any] | None) -> bool:
    """Whether a snapshot's metadata (`bundle.yaml`, or a live collection's) comes from the sandbox."""
    cluster = (meta or {}).get("cluster")
    return isinstance(cluster, dict) and simulated(cluster.get("serverVersion"))

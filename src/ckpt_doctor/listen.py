"""The one reading of a `--listen HOST:PORT` address (watch's metrics, the k8sgpt analyzer)."""

from __future__ import annotations


def parse_listen(text: str) -> tuple[str, int]:
    """`:9808`, `0.0.0.0:9808`, `127.0.0.1:0`, `[::1]:9808` → (host, port); an empty host listens on every
    address. ValueError, saying what is expected, for anything else."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r}: expected HOST:PORT or :PORT (e.g. :9808)")
    return host.strip("[]"), int(port)

"""Locate the packaged data: the rule catalogue (`rules/`), playbooks (`playbooks/`) and the recordings of
real framework runs (`recordings/`, replayed by the sandbox).

Installed wheels carry them under `ckpt_doctor/_data/`; a source checkout (editable install)
reads the top-level folders directly.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    packaged = _PKG / "_data" / name
    if packaged.is_dir():
        return packaged
    checkout = _PKG.parent.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"ckpt-doctor data folder {name!r} is missing from the installation")


def rules_dir() -> Path:
    return data_dir("rules")


def playbooks_dir() -> Path:
    return data_dir("playbooks")


def recordings_dir() -> Path:
    return data_dir("recordings")

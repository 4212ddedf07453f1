"""What the checkpoint listings of the recordings decide (issue 21): partial-latest-checkpoint fails on every
recorded half-written save the framework's discovery picks and passes where the discovery skips it (DCP's
.metadata, DeepSpeed's `latest`, Orbax's rename, Lightning's whole files), in every bundle of the run; and a
bundle whose earlier attempts' logs are all gone, their listings left, still gets the right verdict on the rules
a listing speaks to."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import open_bundle
from tests.recordings.bundles import OUT, all_runs, bundle_id, models_for

RUNS = all_runs()
LISTING_RULES = {"partial-latest-checkpoint", "resumed-older-checkpoint", "lexical-checkpoint-sort",
                 "weights-only-checkpoint", "save-total-limit-unset", "checkpoint-disk-full"}  # fmt: skip


def _picked_partial(run: dict[str, Any]) -> bool:
    """The truth: a later attempt read a checkpoint an earlier one left half-written."""
    partial: set[str] = set()
    for a in run["attempts"]:
        path = (a.get("resume_path") or "").rstrip("/")
        if path and any(path == p or path.startswith(p + "/") for p in partial):
            return True
        partial |= {p.rstrip("/") for p in a.get("partial_paths") or []}
        partial -= {p.rstrip("/") for p in a.get("save_paths") or []}
    return False


def _skipped_partial(run: dict[str, Any]) -> bool:
    return any(a["saves_partial"] for a in run["attempts"][:-1]) and not _picked_partial(run)


def _status(bundle: Path) -> dict[str, dict[str, Any]]:
    with open_bundle(bundle) as snap:
        doc = diagnose_snapshot(snap).to_json()
    return {f["rule"]: f for f in doc["findings"]}


PICKED = [(r, m) for r in RUNS if _picked_partial(r) for m in models_for(r)]
SKIPPED = [(r, m) for r in RUNS if _skipped_partial(r) for m in models_for(r)]


def test_the_recordings_have_both_kinds() -> None:
    assert {r["framework"] for r, _m in PICKED} >= {"hf-trainer", "accelerate"}
    assert {r["framework"] for r, _m in SKIPPED} >= {"torch-dcp", "deepspeed", "orbax"}


@pytest.mark.parametrize(("run", "model"), PICKED, ids=[bundle_id(r, m) for r, m in PICKED])
def test_partial_latest_fails_where_the_discovery_picks_the_half_written_save(run: dict[str, Any], model: str) -> None:
    f = _status(OUT / bundle_id(run, model))["partial-latest-checkpoint"]
    assert f["status"] == "fail", f.get("reason")
    ck = [e for e in f["evidence"] if e["type"] == "checkpoint"]
    assert ck and ck[0]["complete"] is False and ck[0]["why"] and ck[0]["mtime"] and ck[0]["listedAt"]
    assert any(ck[0]["path"].rstrip("/") in (p.rstrip("/") for p in a["partial_paths"]) for a in run["attempts"])


@pytest.mark.parametrize(("run", "model"), SKIPPED, ids=[bundle_id(r, m) for r, m in SKIPPED])
def test_partial_latest_passes_where_the_discovery_skips_it(run: dict[str, Any], model: str) -> None:
    f = _status(OUT / bundle_id(run, model))["partial-latest-checkpoint"]
    assert f["status"] != "fail", f.get("detail")
    if model == "jobset-kept":
        assert f["status"] == "pass", f.get("reason")


KEPT = [r for r in RUNS if "jobset-kept" in models_for(r) and len(r["attempts"]) > 1]


@pytest.mark.parametrize("run", KEPT, ids=[r["id"] for r in KEPT])
def test_earlier_logs_gone_listings_left(run: dict[str, Any], tmp_path: Path) -> None:
    """Every pod kept, only the last attempt's log: the listings decide what the logs no longer can."""
    d = tmp_path / "b"
    shutil.copytree(OUT / bundle_id(run, "jobset-kept"), d)
    pods = yaml.safe_load((d / "pods.yaml").read_text())
    items = pods["items"] if "items" in pods else [pods]
    last = max(items, key=lambda p: p["status"]["startTime"])["metadata"]["name"]
    for p in (d / "logs").iterdir():
        if p.name != last:
            shutil.rmtree(p)
    st = _status(d)
    for rule in run["verdict"]["fail"]:
        if rule in LISTING_RULES:
            assert st[rule]["status"] == "fail", (rule, st[rule].get("reason"))
    for rule in run["verdict"]["pass"]:
        assert st.get(rule, {}).get("status") != "fail", (rule, st[rule].get("detail"))
    if _skipped_partial(run):
        assert st["partial-latest-checkpoint"]["status"] == "pass", st["partial-latest-checkpoint"].get("reason")

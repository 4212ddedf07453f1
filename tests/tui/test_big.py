"""A big TrainJob as the app reads it: a preview, the objects and events in parts, the Diagnosis
deferred; put back together, the same view `build_view` gives, and the findings `diagnose` gives,
in both bundle layouts (kubectl `kind: List` dumps and what `collect` writes)."""

from __future__ import annotations

import io
import json
import os
import pickle
import threading
from pathlib import Path

import pytest

from ckpt_doctor.cli import main
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.sources.bundle import load_bundle
from ckpt_doctor.sources.bundle_write import write_bundle
from ckpt_doctor.tui import bundleproc
from ckpt_doctor.tui.bundleproc import serve
from ckpt_doctor.tui.model import Deferred, View, build_preview, build_view, complete_view
from ckpt_doctor.tui.source import BundleLoader, _Run
from ckpt_doctor.tui.target import Target
from tests.scenario import Attempt, Scenario, convention_log

PODS = 40
KEY = "team-a/big-run"


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 40-pod TrainJob after a JobSet restart, with events, in both layouts."""
    root = tmp_path_factory.mktemp("big")
    ck = "/mnt/ckpt/big-run"
    s = Scenario(name="big-run", num_nodes=PODS)
    s.js_restarts = 1
    s.attempts = [
        Attempt(0, "gpu-node-a", convention_log(ck, 0, 300), phase="Failed", exit_code=1, reason="Error", pods=PODS),
        Attempt(1, "gpu-node-b", convention_log(ck, 250, 600), started=60, pods=PODS),
    ]
    for k, pod in enumerate(s.pod_names()[1]):
        s.event("Pod", pod, "Scheduled", f"Successfully assigned team-a/{pod} to gpu-node-{k % 8}", 60 + k / 100)
        s.event("Pod", pod, "Started", "Started container node", 60.5 + k / 100)
    kubectl = s.write(root / "kubectl")
    return {"kubectl": kubectl, "collect": write_bundle(load_bundle(kubectl), root / "collect")}


def frames_of(bundle: Path) -> list[tuple]:
    out = io.BytesIO()
    serve(bundle, None, None, out)
    data, frames, i = out.getvalue(), [], 0
    while i < len(data):
        n = int.from_bytes(data[i : i + 8], "big")
        frames.append(pickle.loads(data[i + 8 : i + 8 + n]))
        i += 8 + n
    return frames


def same_view(a: View, b: View) -> None:
    """Field by field; the Diagnoses by what the screens and an export read from them."""
    for name in View.__dataclass_fields__:
        if name == "logs":  # a LogRef compares by identity: by what it points at, then
            assert [(e.key, e.ref.path, e.attempt, e.namespace) for e in a.logs] == [
                (e.key, e.ref.path, e.attempt, e.namespace) for e in b.logs
            ]
        elif name == "signatures":  # so does a compiled pattern
            assert [(g.id, g.pattern.pattern) for g in a.signatures] == [
                (g.id, g.pattern.pattern) for g in b.signatures
            ]
        elif name != "diag":
            assert getattr(a, name) == getattr(b, name), name
    assert a.diag is not None and b.diag is not None
    assert [(f.rule.id, f.status, f.result.subject) for f in a.diag.findings] == [
        (f.rule.id, f.status, f.result.subject) for f in b.diag.findings
    ]
    assert a.diag.summary() == b.diag.summary()


@pytest.mark.parametrize("layout", ["kubectl", "collect"])
def test_the_parts_put_back_are_the_view_build_view_gives(big: dict[str, Path], layout: str, monkeypatch) -> None:
    monkeypatch.setattr(bundleproc, "OBJECTS_PER_PART", 7)  # many parts, one short
    monkeypatch.setattr(bundleproc, "EVENTS_PER_PART", 9)
    frames = frames_of(big[layout])
    kinds = [f[0] for f in frames]
    assert kinds[:2] == ["rows", "view"] and kinds[-2:] == ["full", "done"]
    assert kinds.count("objects") > 3 and kinds.count("events") > 3
    preview, shell = frames[1][2], frames[-2][2]
    assert not preview.complete and preview.objects == {} and preview.events == [] and preview.diag is None
    assert shell.complete and shell.objects == {} and isinstance(shell.__dict__["_diag"], Deferred)

    r, w = os.pipe()  # the app's side: the same frames through a reader, as a child would send them
    run = _Run.__new__(_Run)
    run.stderr, run.proc, run.pid = io.BytesIO(), None, None  # type: ignore[assignment]
    run.stdout = os.fdopen(r, "rb")
    run._listen()
    writer = threading.Thread(target=lambda: (serve(big[layout], None, None, os.fdopen(w, "wb"))))
    writer.start()
    run.wait(lambda: KEY in run.views and run.views[KEY].complete)
    writer.join()
    got = run.views[KEY]
    assert got.__dict__["_diag"].__class__ is Deferred  # not unpickled until someone reads it
    want = build_view(diagnose_snapshot(load_bundle(big[layout]), KEY))
    same_view(got, want)
    assert len(got.events) == 2 * PODS and len(got.objects) > 2 * PODS


@pytest.mark.parametrize("layout", ["kubectl", "collect"])
def test_the_app_finds_what_diagnose_finds(
    big: dict[str, Path], layout: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diagnose", "--bundle", str(big[layout]), "-o", "json"]) in (0, 1)
    report = json.loads(capsys.readouterr().out)
    loader = BundleLoader(Target(bundle=big[layout]))
    try:
        view = loader.load_complete(KEY)
    finally:
        loader.close()
    assert [(f.id, f.status) for f in view.findings] == [(f["rule"], f["status"]) for f in report["findings"]]
    assert [v.symptom.id for v in view.verdict] == [v["symptom"] for v in report["verdict"]]
    assert view.diag is not None and view.diag.summary() == report["summary"]


def test_a_preview_then_its_completion_is_build_view(big: dict[str, Path]) -> None:
    diag = diagnose_snapshot(load_bundle(big["kubectl"]), KEY)
    preview = build_preview(diag)
    assert not preview.complete and preview.events == [] and preview.diag is None and preview.objects
    same_view(complete_view(preview, diag), build_view(diag))


def test_a_deferred_value_is_unpickled_once_when_first_read() -> None:
    d = Deferred.of({"a": [1, 2]})
    again = pickle.loads(pickle.dumps(d))  # travels as its bytes
    assert again.get() == {"a": [1, 2]} and again.get() is again.get()
    assert pickle.loads(pickle.dumps(again)).get() == {"a": [1, 2]}  # and again once read


def test_a_view_reads_its_deferred_diagnosis_through(big: dict[str, Path]) -> None:
    diag = diagnose_snapshot(load_bundle(big["collect"]), KEY)
    view = build_view(diag)
    view.diag = Deferred.of(diag)  # type: ignore[assignment]
    assert view.preview().diag is None and isinstance(view.__dict__["_diag"], Deferred)  # a preview never reads it
    assert view.diag is not None and view.diag.summary() == diag.summary()
    assert view.__dict__["_diag"] is view.diag  # read once, kept

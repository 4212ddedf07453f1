"""The report and the other faces never contradict the diagnosis nor mislead (issue 22, one test per thing
that did): each on the held-in bundle that showed it (tests/held/). tests/report/test_agreement.py holds
the same properties over every bundle."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from markdown_it import MarkdownIt

from ckpt_doctor.facts.timeline import timeline_of
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.report import markdown, postmortem
from ckpt_doctor.report.chart import chart_data, render_svg
from ckpt_doctor.report.incident import render_report
from ckpt_doctor.sources.bundle import load_bundle
from ckpt_doctor.sources.redact import Redactor
from tests.clirun import run_cli

HELD = Path(__file__).resolve().parents[1] / "held" / "bundles"
SVG = "{http://www.w3.org/2000/svg}"


def diagnose(name: str):
    return diagnose_snapshot(load_bundle(HELD / name))


def report_doc(name: str) -> dict:
    return postmortem.build(diagnose(name), Redactor())


def test_a_half_written_newest_checkpoint_is_not_a_complete_save() -> None:
    """Attempt 0 printed `saved checkpoint-300` and was killed; attempt 1 found checkpoint-300 incomplete."""
    diag = diagnose("partial-newest-save")
    assert {f.rule.id for f in diag.failed()} >= {"partial-latest-checkpoint"}
    doc = postmortem.build(diag, Redactor())
    assert doc["attempts"][0]["saves"] == "100, 200"
    assert [s.step for s in timeline_of(diag.facts).attempts[0].saves] == [100, 200]
    assert "not known" in doc["summary"]["cost"]  # attempts 1 and 2 never got past loading it


def test_a_cost_is_never_at_least_0() -> None:
    for name in ("crash-loop", "kueue-first-run", "partial-newest-save", "kept-log-of-a-gone-pod"):
        doc = report_doc(name)
        said = doc["summary"]["cost"] + " " + " ".join(v for _k, v in doc["impact"])
        assert not re.search(r"at least 0\b", said), (name, said)


def test_a_crash_loop_is_no_running_attempt_and_its_attempts_are_in_time_order() -> None:
    doc = report_doc("crash-loop")
    state = dict(doc["impact"])["When the snapshot was taken"]
    assert "running" not in state and "CrashLoopBackOff" in state and "crash-looping" in doc["summary"]["cost"]
    assert [r["attempt"] for r in doc["attempts"]] == ["attempts 0-3 (inferred)", "attempt 4", "attempt 5"]
    assert doc["attempts"][2]["ended"] != "running" and "CrashLoopBackOff" in doc["attempts"][2]["end"]
    started = [r["started"] for r in doc["attempts"] if r["started"] != "unknown"]
    assert started == sorted(started)


def test_a_pipeline_keeps_its_tee_in_the_evidence_and_gets_lint_fix_s_advice() -> None:
    diag = diagnose("tee-pipeline")
    [f] = [f for f in diag.failed() if f.rule.id == "sigterm-not-forwarded"]
    assert any("| tee /mnt/ckpt/train.log" in str(ev.get("value")) for ev in f.result.evidence)
    fix = f.result.fix or ""
    assert "redirect its output instead" in fix and "Start the trainer with `exec`" not in fix


def test_the_decisive_event_is_cited_and_the_missing_class_is_not_called_uncollected() -> None:
    diag = diagnose("storageclass-missing")
    [f] = [f for f in diag.failed() if f.rule.id == "pvc-unbound"]
    assert any(ev.get("type") == "event" and ev.get("reason") == "ProvisioningFailed" for ev in f.result.evidence)
    assert "ProvisioningFailed ×150" in (f.result.detail or "")
    out = run_cli(["diagnose", "--bundle", str(HELD / "storageclass-missing"), "-v"]).out
    assert "neither its PersistentVolume nor its StorageClass is in the snapshot" not in out
    assert "fast-ssd is not in the snapshot (not collected)" not in out


def test_reproduce_greps_keep_the_runs_of_spaces_of_the_line_they_quote() -> None:
    doc = report_doc("tee-pipeline")
    greps = [r["command"] for r in doc["reproduce"] if "grep" in r["command"]]
    bar = next(c for c in greps if "230/1000" in c)
    assert "23%|██        | 230/1000" in bar


def test_a_pipe_in_a_code_span_outside_a_table_shows_no_backslash() -> None:
    md = markdown.render(diagnose("spaced-crash-line"))
    spans = {c.content for t in MarkdownIt("gfm-like").parse(md) for c in t.children or [] if c.type == "code_inline"}
    quoted = [s for s in spans if "No space left on device:" in s]
    assert quoted and all("\\|" not in s and "opt|rank`0`.pt'  (shard  3 | 8)" in s for s in quoted), quoted


def _label_boxes(svg: str) -> list[tuple[float, float, float, float]]:
    """Boxes of every printed label, from the SVG: 12 px text, 0.62 em a character, drawn from x (or centred
    on it when the label says so), its baseline at y."""
    root = ET.fromstring(svg)
    boxes = []
    for t in root.iter(f"{SVG}text"):
        if "label" not in (t.get("class") or "").split() or not t.text:
            continue
        x, y, w = float(t.get("x") or 0), float(t.get("y") or 0), 0.62 * 12 * len(t.text)
        boxes.append((x, y - 12, x + w, y + 3))
    return boxes


def test_the_chart_labels_of_a_crash_loop_do_not_pile_up() -> None:
    for name in ("crash-loop-after-a-long-run", "dense-restarts"):
        data = chart_data(timeline_of(diagnose(name).facts))
        boxes = _label_boxes(render_svg(data))
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (name, a, b)
            assert a[2] <= 900 - 74, (name, a)  # inside the plot, not clipped at the right edge


def test_the_markdown_report_renders_its_quotes_exactly() -> None:
    rendered = render_report(diagnose("spaced-crash-line"), "markdown")
    spans = {c.content for t in MarkdownIt("gfm-like").parse(rendered.text) for c in t.children or []
             if c.type == "code_inline"}  # fmt: skip
    assert any("device:   '/mnt/ckpt/run  a/opt|rank`0`.pt'  (shard  3 | 8)" in s for s in spans), spans

"""One story per diagnosis (issue 22 §1): every bundle the suite holds, through every face, and they agree.

Bundles: examples/, the held-in bundles of tests/held/bundles/, the recordings' bundles of
tests/recordings/bundles/ and any other bundle under tests/ (a directory with a bundle.yaml). Faces: the
text output, `-o json` (with its timeline), `-o markdown`, SARIF, JUnit, the post-incident report (its
document, Markdown and HTML, and the step chart), the app's view, the fleet row and the watcher's figures.

What must hold, for each bundle:
- the same failing findings in every face;
- no complete save that a finding calls incomplete;
- costs with their bounds stated (never "at least 0"; a lower bound says so in the report, the fleet and
  the metrics alike);
- attempts in time order, the same attempts in the same order in the report, the JSON and the app;
- a crash loop shown as such (and no attempt of it running);
- quotes exact: every piece of evidence the Markdown faces cite renders (markdown-it-py, GFM) as a code
  span holding exactly its text, and a table cell as its text;
- the report's reproduce commands, run against the bundle, show what they say: `kubectl logs … | grep`
  matches (the log the bundle kept stands in for the cluster here; tests/report/test_reproduce.py runs the
  whole commands with a real kubectl against the fake API server serving the bundle);
- the chart's labels, read back from the SVG, overlap nothing and stay in the plot.
"""

from __future__ import annotations

import html as htmlmod
import json
import re
import shlex
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from ckpt_doctor.engine.walk import Diagnosis
from ckpt_doctor.facts.timeline import Timeline, epoch, timeline_of
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.report import html as report_html
from ckpt_doctor.report import junit, markdown, postmortem, postmortem_md, sarif, text
from ckpt_doctor.report.chart import chart_data, label_box, render_svg
from ckpt_doctor.report.evidence import describe
from ckpt_doctor.report.mdtext import one_line
from ckpt_doctor.report.reproduce import GREP
from ckpt_doctor.sources.bundle import load_bundle
from ckpt_doctor.sources.redact import Redactor

ROOT = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"


def all_bundles() -> list[Path]:
    """Every bundle the suite holds (a directory with a bundle.yaml), examples first."""
    examples = sorted(p.parent for p in (ROOT / "examples").glob("*/bundle.yaml"))
    held = sorted(p.parent for p in (ROOT / "tests").rglob("bundle.yaml") if "__pycache__" not in p.parts)
    return examples + held


BUNDLES = all_bundles()
MD = MarkdownIt("gfm-like")


def _id(p: Path) -> str:
    return str(p.relative_to(ROOT))


@dataclass
class Faces:
    """One diagnosis of one bundle and every face drawn from it (each computed once)."""

    bundle: Path
    diag: Diagnosis = field(init=False)

    def __post_init__(self) -> None:
        self.diag = diagnose_snapshot(load_bundle(self.bundle))

    @cached_property
    def tl(self) -> Timeline:
        return timeline_of(self.diag.facts)

    @cached_property
    def text(self) -> str:
        return text.render(self.diag, verbose=True)

    @cached_property
    def json(self) -> dict[str, Any]:
        from ckpt_doctor.report import jsonout

        return json.loads(jsonout.render(self.diag))

    @cached_property
    def markdown(self) -> str:
        return markdown.render(self.diag)

    @cached_property
    def sarif(self) -> dict[str, Any]:
        return json.loads(sarif.render(self.diag))

    @cached_property
    def junit(self) -> ET.Element:
        return ET.fromstring(junit.render(self.diag))

    @cached_property
    def doc(self) -> dict[str, Any]:
        return postmortem.build(self.diag, Redactor())

    @cached_property
    def report_md(self) -> str:
        return postmortem_md.render(self.doc)

    @cached_property
    def report_html(self) -> str:
        return report_html.render(self.doc, None)

    @cached_property
    def chart(self) -> tuple[Any, str | None]:
        data = chart_data(self.tl)
        return data, (None if data.empty else render_svg(data))

    @cached_property
    def view(self) -> Any:
        from ckpt_doctor.tui.model import build_view

        return build_view(self.diag)

    @cached_property
    def row(self) -> Any:
        from ckpt_doctor.fleet.summary import summarize

        return summarize(self.diag)

    @cached_property
    def fleet_cells(self) -> list[str]:
        from ckpt_doctor.fleet.render import _cells
        from ckpt_doctor.fleet.scan import JobOutcome

        o = JobOutcome(self.row.namespace, self.row.name, self.row, None)
        return _cells(o)

    @cached_property
    def figures(self) -> Any:
        from ckpt_doctor.watch.state import Figures

        return Figures.of(self.row)


@pytest.fixture(scope="module", params=BUNDLES, ids=_id)
def f(request: pytest.FixtureRequest) -> Faces:
    """One bundle's faces, shared by the tests of this module (pytest runs them bundle by bundle)."""
    return Faces(request.param)


# -- the same findings -------------------------------------------------------------------------------------
def test_every_face_tells_the_same_findings(f: Faces) -> None:
    failing = {(x.rule.id, x.rule.severity) for x in f.diag.failed()}
    ids = {r for r, _s in failing}
    assert {(x["rule"], x["severity"]) for x in f.json["findings"] if x["status"] == "fail"} == failing
    results = f.sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results if r.get("kind", "fail") == "fail"} >= ids
    failed_cases = {c.get("name") for c in f.junit.iter("testcase") if c.find("failure") is not None}
    assert all(any(i in str(n) for n in failed_cases) for i in ids), (ids, failed_cases)
    for i in ids:
        assert i in f.text and i in f.markdown
    told = {e["symptom"]["id"] for e in f.doc["rootCause"]}
    told |= {c["id"] for e in f.doc["rootCause"] for c in e["causes"]} | {c["id"] for c in f.doc["latent"]}
    assert told <= ids
    assert {x.id for x in f.view.findings if x.status == "fail"} == ids
    assert set(f.row.failed) == failing and set(f.figures.failed) == failing
    if failing:
        assert f.row.worst is not None and (f.row.worst.rule.id, f.row.severity) in failing


# -- saves ---------------------------------------------------------------------------------------------------
_STEP = re.compile(r"(?:checkpoint|ckpt|step|iter)[-_]?0*(\d+)")


def _incomplete(f: Faces) -> list[tuple[int, int | None]]:
    """(step, attempt that found it incomplete) for every checkpoint a failing finding calls incomplete."""
    out = []
    for x in f.diag.failed():
        for ev in x.result.evidence:
            if ev.get("type") == "checkpoint" and ev.get("complete") is False:
                m = _STEP.search(str(ev.get("path") or ""))
                if m:
                    out.append((int(m.group(1)), None))
        if x.rule.id == "partial-latest-checkpoint":
            for ev in x.result.evidence:
                if ev.get("type") == "log":
                    m = _STEP.search(str(ev.get("text") or ""))
                    if m:
                        out.append((int(m.group(1)), ev.get("attempt")))
    return out


def test_no_complete_save_is_one_a_finding_calls_incomplete(f: Faces) -> None:
    for step, by in _incomplete(f):
        for a in f.json["timeline"]["attempts"]:
            if by is None or a["index"] is None or a["index"] < by:
                assert step not in [s["step"] for s in a["saves"]], (step, a["index"])
        for row, a in zip(f.doc["attempts"], f.tl.attempts, strict=True):
            if by is None or a.index is None or a.index < by:
                assert str(step) not in re.split(r"[,\s()…]+", row["saves"]), (step, row)
        for v in f.view.attempts:
            if by is None or v.index < by:
                assert step not in v.saves


# -- costs ---------------------------------------------------------------------------------------------------
def test_costs_come_with_their_bounds(f: Faces) -> None:
    tl = f.tl
    every = "\n".join([f.report_md, f.text, f.markdown, " ".join(f.fleet_cells)])
    assert not re.search(r"at least 0\b|≥0\b", every), f.bundle
    lost, complete = tl.steps_lost, tl.lost_complete
    cost = f.doc["summary"]["cost"]
    redone = dict(f.doc["impact"]).get("Steps redone")
    assert f.row.lost.steps == lost and f.row.lost.partial == (not complete or lost is None)
    assert f.figures.lost_steps == lost and f.figures.lost_complete == (complete and lost is not None)
    cell = f.fleet_cells[4]
    if lost is None:
        assert cell == "?"
        if tl.interruptions:
            assert "not known" in cost and redone is not None and redone.startswith("unknown")
    elif complete:
        assert cell == str(lost)
        if tl.interruptions:
            assert redone == str(lost)
    else:
        assert cell in (f"≥{lost}", "0 (+?)")
        if tl.interruptions:
            assert redone is not None and ("at least" in redone or "not all" in redone), redone
            assert "at least" in cost or "not all of it" in cost, cost


# -- time order ---------------------------------------------------------------------------------------------
def test_attempts_are_in_time_order_and_the_same_everywhere(f: Faces) -> None:
    tl = f.tl
    starts = [epoch(a.started) for a in tl.attempts if a.started]
    assert starts == sorted(starts), [(a.label, a.started) for a in tl.attempts]
    for a in tl.attempts:
        if a.started and a.ended:
            assert epoch(a.ended) >= epoch(a.started), a.label  # type: ignore[operator]
    labels = [a.label for a in tl.attempts]
    assert [r["attempt"].removesuffix(" (inferred)") for r in f.doc["attempts"]] == labels
    assert [v.label for v in f.view.attempts] == [a.short for a in tl.attempts]
    assert [a["index"] for a in f.json["timeline"]["attempts"]] == [a.index for a in tl.attempts]
    times = [m["at"] for m in f.doc["moments"] if m["at"] != "time unknown"]
    assert times == sorted(times), f.doc["moments"]
    assert f.row.attempts == f.figures.attempts >= tl.count


# -- crash loops --------------------------------------------------------------------------------------------
def _crash_looping(f: Faces) -> bool:
    for p in f.diag.facts.scope.trainer_pods():
        for cs in p.status.get("containerStatuses") or []:
            w = ((cs or {}).get("state") or {}).get("waiting") if isinstance(cs, dict) else None
            if isinstance(w, dict) and w.get("reason") == "CrashLoopBackOff":
                return True
    return False


def test_a_crash_loop_is_shown_as_one(f: Faces) -> None:
    if not _crash_looping(f):
        assert not f.tl.crash_loop and "crash-looping" not in f.report_md and f.row.state != "crashlooping"
        return
    tl = f.tl
    assert tl.crash_loop and not any(a.running for a in tl.attempts)
    assert "crash-looping" in f.report_md and "crash-looping" in f.doc["summary"]["cost"]
    assert "CrashLoopBackOff" in dict(f.doc["impact"])["When the snapshot was taken"]
    assert any("CrashLoopBackOff" in v.ended for v in f.view.attempts) and not any(v.running for v in f.view.attempts)
    assert f.row.state == "crashlooping" and f.figures.state == "crashlooping" and f.fleet_cells[2] == "crashlooping"
    assert any("crash-looping" in n for n in f.json["timeline"]["notes"])


# -- quotes ---------------------------------------------------------------------------------------------------
def _code_spans(md: str) -> set[str]:
    out = set()
    for tok in MD.parse(md):
        for child in tok.children or []:
            if child.type == "code_inline":
                out.add(child.content)
    return out


def _cells(md: str) -> list[str]:
    """The rendered text of every GFM table cell (code spans' content included, without backticks)."""
    out: list[str] = []
    toks = MD.parse(md)
    for i, tok in enumerate(toks):
        if tok.type == "td_open" and toks[i + 1].type == "inline":
            out.append("".join(c.content for c in toks[i + 1].children or [] if c.type in ("text", "code_inline")))
    return out


def test_quotes_are_exact_in_every_markdown_and_html_face(f: Faces) -> None:
    shown = [*(e.symptom for e in f.diag.verdict), *(c for e in f.diag.verdict for c in e.causes), *f.diag.latent]
    spans = _code_spans(f.markdown)
    report_spans = _code_spans(f.report_md)
    html_codes = {htmlmod.unescape(m) for m in re.findall(r"<code>(.*?)</code>", f.report_html, re.S)}
    for x in shown:
        for ev in x.result.evidence:
            quote = one_line(describe(ev))
            assert quote in spans, (x.rule.id, quote)
            assert quote in report_spans, (x.rule.id, quote)
            assert describe(ev) in html_codes, (x.rule.id, describe(ev))
    cells = set(_cells(f.markdown))
    for n in f.diag.not_evaluated():
        reason = one_line(n.result.reason or "").strip().replace("`", "")
        assert reason in cells, reason


# -- reproduce commands ----------------------------------------------------------------------------------------
def _log_file(bundle: Path, pod: str, container: str, previous: bool) -> Path | None:
    name = f"{container}{'.previous' if previous else ''}.log"
    for cand in (bundle / "logs" / pod / name, bundle / "logs" / f"{pod}{'.previous' if previous else ''}.log"):
        if cand.is_file():
            return cand
    return None


def grep_against_bundle(bundle: Path, command: str) -> subprocess.CompletedProcess[str] | None:
    """Run a `kubectl logs POD -c C [--previous] | grep …` command with the bundle's log in kubectl's place:
    `cat FILE | grep …`, the same grep, quoting and pattern; None when the command is no log grep."""
    head, sep, rest = command.partition(GREP)
    if not sep:
        return None
    words = shlex.split(head)
    assert words[:2] == ["kubectl", "logs"], command
    pod, container, previous = words[2], words[words.index("-c") + 1], "--previous" in words
    log = _log_file(bundle, pod, container, previous)
    assert log is not None, f"the bundle holds no log for {command}"
    return subprocess.run(f"cat {shlex.quote(str(log))}{GREP}{rest}", shell=True, capture_output=True, text=True)


def test_the_reproduce_greps_match_the_bundle(f: Faces) -> None:
    for r in f.doc["reproduce"]:
        got = grep_against_bundle(f.bundle, r["command"])
        if got is not None:
            assert got.returncode == 0 and got.stdout, (r["command"], got.stderr)


# -- the chart ------------------------------------------------------------------------------------------------
def chart_labels(svg: str) -> tuple[list[tuple[float, float, float, float]], float, float]:
    """The boxes of the labels the chart prints (read from the SVG), and the plot's width and height."""
    root = ET.fromstring(svg)
    layer = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "plot labels")
    plot = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "plot")
    bg = next(r for r in plot.iter(f"{SVG}rect") if "background" in (r.get("class") or ""))
    boxes = [label_box(float(t.get("x") or 0), float(t.get("y") or 0), t.text or "") for t in layer.iter(f"{SVG}text")]
    return boxes, float(bg.get("width") or 0), float(bg.get("height") or 0)


def test_the_chart_labels_overlap_nothing_and_stay_in_the_plot(f: Faces) -> None:
    data, svg = f.chart
    if svg is None:
        return
    boxes, w, h = chart_labels(svg)
    for i, a in enumerate(boxes):
        assert a[0] >= 0 and a[1] >= 0 and a[2] <= w + 0.5 and a[3] <= h + 0.5, (a, w, h)
        for b in boxes[i + 1 :]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)
    labelled = {t for t in re.findall(r'class="label"[^>]*>([^<]*)</text>', svg)}
    for d in data.drops:
        if d.from_step is not None or d.to_step is not None:
            assert any(d.label in t for t in labelled) or any(d.label in n for n in data.notes), d.label


# -- the decisive event and what was collected -------------------------------------------------------------
def test_the_decisive_event_is_cited_and_what_was_listed_is_not_called_uncollected(f: Faces) -> None:
    sc = f.diag.facts.scope
    for x in f.diag.failed():
        if x.rule.id != "pvc-unbound" or not x.result.subject:
            continue
        claim = x.result.subject.get("name")
        warned = [e for e in sc.events if (e.raw.get("involvedObject") or {}).get("name") == claim
                  and e.raw.get("type") == "Warning"]  # fmt: skip
        if warned:
            assert any(ev.get("type") == "event" for ev in x.result.evidence), x.result.evidence
            assert any(str(w.raw.get("reason")) in f.report_md for w in warned)
    if sc.snap.coverage.is_listed("StorageClass"):
        for pvc in sc.pvcs.values():
            cls = pvc.spec.get("storageClassName")
            if cls and cls not in sc.storageclasses:
                said = f"StorageClass {cls} is not in the snapshot (not collected)"
                assert said not in f.text and said not in f.report_md

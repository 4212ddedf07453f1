"""`ckpt-doctor report`: output, safe writes, exit codes, and nothing secret leaves."""

from __future__ import annotations

import re
from pathlib import Path

from tests.clirun import run_cli
from tests.report.conftest import EXAMPLES
from tests.scenario import PodSpecKnobs, Scenario, convention_log
from tests.stories import CK, _restart

LEX = str(EXAMPLES / "lexical-sort-older")
TOKEN = "hf_" + "Zx9" * 12  # the shape of a Hugging Face token


def test_markdown_on_stdout() -> None:
    r = run_cli(["report", "--bundle", LEX])
    assert r.rc == 0 and r.err == ""
    assert r.out.startswith("# Post-incident report: TrainJob team-a/sft-resumable")
    for section in ("## Summary", "## Impact", "## Timeline", "## Root cause", "## Fixes",
                    "## What could not be checked", "## Reproduce the evidence"):  # fmt: skip
        assert section in r.out
    assert "↓ ≥ 1020 → 950, ≥ 70 steps lost" in r.out
    assert "--out FILE.md" in r.out  # where the chart is, since stdout has none


def test_out_writes_the_chart_beside_it_and_never_overwrites(tmp_path: Path) -> None:
    out = tmp_path / "pm.md"
    r = run_cli(["report", "--bundle", LEX, "--out", str(out)])
    assert r.rc == 0, r.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pm-chart.png", "pm-chart.svg", "pm.md"]
    assert "![Training step over time, one line per attempt](pm-chart.png)" in out.read_text()
    assert "pm.md" in r.err and "pm-chart.svg" in r.err  # it says what it wrote
    out.write_text("mine")
    r = run_cli(["report", "--bundle", LEX, "--out", str(out)])
    assert r.rc == 3 and "--force" in r.err and out.read_text() == "mine"
    r = run_cli(["report", "--bundle", LEX, "--out", str(out), "--force"])
    assert r.rc == 0 and out.read_text().startswith("# Post-incident report")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_a_chart_file_in_the_way_stops_before_anything_is_written(tmp_path: Path) -> None:
    (tmp_path / "pm-chart.svg").write_text("keep")
    r = run_cli(["report", "--bundle", LEX, "--out", str(tmp_path / "pm.md")])
    assert r.rc == 3 and not (tmp_path / "pm.md").exists()


def test_html_is_one_file(tmp_path: Path) -> None:
    out = tmp_path / "pm.html"
    r = run_cli(["report", "--bundle", LEX, "-o", "html", "--out", str(out)])
    assert r.rc == 0, r.err
    assert [p.name for p in tmp_path.iterdir()] == ["pm.html"]
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "70 steps lost" in page


def test_exit_codes() -> None:
    assert run_cli(["report"]).rc == 2
    assert run_cli(["report", "team-a/x", "--bundle", LEX]).rc == 2
    assert run_cli(["report", "--bundle", LEX, "--force"]).rc == 2
    assert run_cli(["report", "--bundle", LEX, "-o", "pdf"]).rc == 2
    r = run_cli(["report", "--bundle", "/nonexistent/bundle"])
    assert r.rc == 3 and "Traceback" not in r.err
    assert run_cli(["report", "--bundle", LEX, "--out", "/nonexistent/dir/pm.md"]).rc == 3
    assert run_cli(["report", "--bundle", LEX, "--redact-pattern", "("]).rc == 2  # a bad flag value: usage


def _outside_code(md: str) -> str:
    md = re.sub(r"^(`{3,})[^\n]*\n.*?^\1$", "", md, flags=re.S | re.M)
    return re.sub(r"(`+).+?\1", "", md)


def test_nothing_secret_leaves(tmp_path: Path) -> None:
    """A token in the runtime's env (quoted by the patch) and in a log line is redacted in both formats."""
    knobs = PodSpecKnobs(env=[{"name": "CKPT_DIR", "value": "/mnt/ckpt/default"}, {"name": "HF_TOKEN", "value": TOKEN}])
    s = Scenario(knobs=knobs)
    s.ancestor_label, s.label_on_pod_template = False, True  # a fix with a patch of the runtime's YAML
    crash = f"RuntimeError: could not fetch the model with token {TOKEN}"
    _restart(s, convention_log("/mnt/ckpt/default", 0, 120, crash=crash), convention_log(CK, 100, 180))
    bundle = s.write(tmp_path / "b")
    md = run_cli(["report", "--bundle", str(bundle)])
    html = run_cli(["report", "--bundle", str(bundle), "-o", "html"])
    assert md.rc == 0 and html.rc == 0, md.err + html.err
    assert "```diff" in md.out  # the patch is there, with the env around it
    for text in (md.out, html.out):
        assert TOKEN not in text and TOKEN[:12] not in text
    assert "redacted" in md.out
    assert "<redacted" not in _outside_code(md.out)  # GitHub would read it as an HTML tag and hide it
    assert "<redacted" not in html.out  # escaped: &lt;redacted…


def test_live_through_the_fake_api_server(tmp_path: Path) -> None:
    """The live path: the real kubernetes client over HTTP, read-only, redacted like collect."""
    from tests.fakeapi import FakeKube

    kube = FakeKube()
    kube.load_bundle(EXAMPLES / "final-checkpoint-missing")
    kube.start()
    try:
        kubeconfig = kube.kubeconfig(tmp_path / "kubeconfig", namespace="team-a")
        r = run_cli(["report", "team-a/sft-resumable", "--kubeconfig", str(kubeconfig), "-q"])
        assert r.rc == 0, r.err
        assert "live cluster" in r.out and "↓ ≥ 480 → 400, ≥ 80 steps lost" in r.out
        assert "ckpt-doctor report team-a/sft-resumable -o markdown" in r.out
        assert all(req.method == "GET" for req in kube.requests)
    finally:
        kube.stop()
    assert kube.errors == []

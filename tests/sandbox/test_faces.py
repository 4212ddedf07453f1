"""Every face against the sandbox, each saying it talks to a simulation: `diagnose` (one TrainJob, and the fleet with
-A), `collect` (and the bundle it writes, diagnosed offline), `report`, `watch` (its metrics), the app."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

from ckpt_doctor.sandbox.cluster import Sandbox
from ckpt_doctor.sandbox.scenarios import SCENARIOS
from tests.clirun import run_cli
from tests.drill.conftest import ROOT
from tests.watch.conftest import free_port, parse_metrics, value, wait_for

WORDS = "sandbox (simulated cluster)"


def kc(sb: Sandbox) -> list[str]:
    return ["--kubeconfig", str(sb.kubeconfig)]


def test_diagnose_one_trainjob_finds_what_its_scenario_breaks(sandbox: Sandbox) -> None:
    for spec in SCENARIOS:
        got = run_cli(["diagnose", f"{sandbox.namespace}/{spec.name}", "-o", "json", *kc(sandbox)])
        doc = got.json()
        failing = {f["rule"] for f in doc["findings"] if f["status"] == "fail"}
        assert set(spec.rules) <= failing, (spec.name, failing)
        assert got.rc == (1 if spec.rules else 0), (spec.name, got.err)
        if spec.verdict == "passed":
            assert failing == set(), failing
        assert doc["cluster"]["simulated"] is True  # every output format says it: JSON for the programs reading it
    md = run_cli(["diagnose", f"{sandbox.namespace}/checkpoint-on-emptydir", "-o", "markdown", *kc(sandbox)])
    assert WORDS in md.out.split("\n## ")[0], md.out[:400]
    text = run_cli(["diagnose", f"{sandbox.namespace}/checkpoint-on-emptydir", *kc(sandbox)])
    assert WORDS in text.out.splitlines()[0] and "ckpt-dir-not-persistent" in text.out


def test_diagnose_all_namespaces_ranks_every_scenario(sandbox: Sandbox) -> None:
    got = run_cli(["diagnose", "-A", *kc(sandbox)])
    assert got.rc == 1, got.err
    assert WORDS in got.out.splitlines()[0]
    for spec in SCENARIOS:
        assert spec.name in got.out


def test_collect_writes_a_bundle_that_says_where_it_came_from(sandbox: Sandbox, tmp_path: Path) -> None:
    out = tmp_path / "b.tar.gz"
    got = run_cli(["collect", f"{sandbox.namespace}/lexical-checkpoint-sort", "-o", str(out), *kc(sandbox)])
    assert got.rc == 0, got.err
    with tarfile.open(out) as tar:
        meta = next(m for m in tar.getmembers() if m.name.endswith("bundle.yaml"))
        assert b"+ckpt-doctor-sandbox" in tar.extractfile(meta).read()  # type: ignore[union-attr]
    offline = run_cli(["diagnose", "--bundle", str(out)])
    assert offline.rc == 1 and "lexical-checkpoint-sort" in offline.out and WORDS in offline.out.splitlines()[0]


def test_report_says_it_is_a_simulation(sandbox: Sandbox) -> None:
    got = run_cli(["report", f"{sandbox.namespace}/checkpoint-on-emptydir", "-o", "markdown", *kc(sandbox)])
    assert got.rc in (0, 1), got.err
    assert WORDS in got.out and "ckpt-dir-not-persistent" in got.out


def test_watch_serves_the_scenarios_verdicts(sandbox: Sandbox, tmp_path: Path) -> None:
    port = free_port()
    err = tmp_path / "stderr.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"}
    with err.open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "ckpt_doctor", "watch", "--listen", f"127.0.0.1:{port}",
                                 "--debounce", "0.2", *kc(sandbox)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=stderr, text=True)
    try:
        import urllib.request

        def verdict() -> dict | None:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                samples = parse_metrics(r.read().decode())
            hit = value(samples, "ckpt_doctor_finding", namespace=sandbox.namespace, trainjob="checkpoint-on-emptydir",
                        rule="ckpt-dir-not-persistent", severity="critical")
            return samples if hit else None

        wait_for(verdict, "the watcher's verdict on checkpoint-on-emptydir")
        logs = [json.loads(line) for line in err.read_text().splitlines() if line.strip()]
        start = next(x for x in logs if x.get("msg") == "watching" or x.get("event") == "watching")
        assert start.get("cluster") == WORDS, start
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


async def test_the_app_picker_says_it_before_a_trainjob_is_chosen(sandbox: Sandbox) -> None:
    from ckpt_doctor.tui.app import DoctorApp
    from ckpt_doctor.tui.screens.picker import PickerScreen
    from ckpt_doctor.tui.target import Target
    from tests.tui.conftest import screen_text, settle_until

    app = DoctorApp(Target(namespace=sandbox.namespace, kubeconfig=str(sandbox.kubeconfig), timeout=5.0))
    async with app.run_test(size=(140, 30)) as pilot:
        await settle_until(pilot, lambda: bool(app.rows) and isinstance(app.screen, PickerScreen))
        assert app.view is None  # nothing chosen yet: the listing alone tells
        assert WORDS in app.sub_title, app.sub_title
        assert WORDS in screen_text(app)


def test_a_namespace_that_does_not_exist_is_said_not_an_empty_scan(sandbox: Sandbox) -> None:
    """`diagnose -n NS` where NS does not exist: exit 3 saying so (it read as "No TrainJob found", exit 0); a
    namespace that exists keeps its scan."""
    got = run_cli(["diagnose", "-n", "no-such-team", *kc(sandbox)])
    assert got.rc == 3, got
    assert len(got.err.strip().splitlines()) == 1 and "namespace 'no-such-team' does not exist" in got.err, got.err
    assert run_cli(["diagnose", "-n", sandbox.namespace, "-o", "json", *kc(sandbox)]).rc in (0, 1)

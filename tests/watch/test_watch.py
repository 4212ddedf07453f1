"""`ckpt-doctor watch` as a process against FakeKube while TrainJobs restart: the metrics follow.

One watcher runs for the module. Three TrainJobs, each in its own namespace, train their first
attempt; then, while every watch is being cut (dropped connections) and the server forgets its
history (so the watcher must list again on 410), two of them crash and restart: `team-ok` resumes
from its newest checkpoint, `team-bad` (an emptyDir checkpoint directory) trains from step 0; the
third is deleted. Every assertion waits on a condition (bounded), never a fixed sleep.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakeapi.server import FakeKube
from tests.live.conftest import REAL_KUBECONFIG
from tests.scenario import PodSpecKnobs
from tests.watch.conftest import WAIT, Watch, start_watch, value, wait_for
from tests.watch.sim import Job, restarted, running_first_attempt

pytestmark = pytest.mark.skipif(bool(REAL_KUBECONFIG), reason="seeds TrainJobs and injects faults on the fake")

NAME = "sft-resumable"
EMPTYDIR = PodSpecKnobs(ckpt_volume="emptyDir")
ATTEMPT = "ckpt_doctor_trainjob_attempt"
STATUS = "ckpt_doctor_trainjob_resume_status"
NAMESPACES = ("team-ok", "team-bad", "team-gone")


def status(samples: dict[Any, float], ns: str, state: str) -> float | None:
    return value(samples, STATUS, namespace=ns, trainjob=NAME, status=state)


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watch]:
    with FakeKube(latency_ms=2) as kube:
        kube.bookmark_interval = 0.5
        ok, bad, gone = Job("team-ok"), Job("team-bad"), Job("team-gone")
        ok.show(kube, running_first_attempt())
        bad.show(kube, running_first_attempt(EMPTYDIR))
        gone.show(kube, running_first_attempt())
        w = start_watch(kube, tmp_path_factory.mktemp("watch"), "-A", "--debounce", "0.3", "--max-delay", "2",
                        "--watch-timeout", "20")  # fmt: skip
        try:
            first = wait_for(
                lambda: (s := w.samples())
                and all(value(s, ATTEMPT, namespace=ns, trainjob=NAME) == 1 for ns in NAMESPACES)
                and s,
                "the first attempts in /metrics",
            )
            w.notes["before"] = first
            w.notes["ready"] = w.get("/readyz")
            # every watch stream is cut at its next event, while the jobs restart and the server compacts
            kube.drop_watches_after(0)
            kube.end_watches()
            kube.watch_event_delay_ms = 20  # and a slow stream once they are back
            ok.show(kube, restarted(resume=True))
            bad.show(kube, restarted(resume=False, knobs=EMPTYDIR))
            gone.delete(kube)
            kube.compact()
            kube.clear_faults()
            w.notes["after"] = wait_for(
                lambda: (s := w.samples())
                and status(s, "team-bad", "fresh_start") == 1
                and status(s, "team-ok", "resumed") == 1
                and value(s, ATTEMPT, namespace="team-gone", trainjob=NAME) is None
                and s,
                "the restarts in /metrics",
            )
            kube.watch_event_delay_ms = 0
            yield w
        finally:
            w.notes["rc"] = w.stop()
        assert kube.errors == [], "the fake API server hit a bug"


def test_first_attempts_are_seen(watched: Watch) -> None:
    s = watched.notes["before"]
    for ns in NAMESPACES:
        assert status(s, ns, "none") == 1, ns  # nothing restarted yet: no resume to judge
        assert value(s, "ckpt_doctor_trainjob_state", namespace=ns, trainjob=NAME, state="running") == 1
        assert value(s, "ckpt_doctor_trainjob_last_checkpoint_step", namespace=ns, trainjob=NAME) == 100
    assert watched.notes["ready"] == (200, "ok\n")


def test_restarts_are_judged(watched: Watch) -> None:
    s = watched.notes["after"]
    ok, bad = {"namespace": "team-ok", "trainjob": NAME}, {"namespace": "team-bad", "trainjob": NAME}
    assert value(s, ATTEMPT, **ok) == 2 and value(s, ATTEMPT, **bad) == 2
    # the restart deleted attempt 0's pods and logs: the steps lost are what the watcher saw it reach (120,
    # the last time its objects changed) minus where attempt 1 began: lower bounds, and said to be
    assert value(s, "ckpt_doctor_trainjob_lost_steps", **bad) == 120  # began again at 0
    assert value(s, "ckpt_doctor_trainjob_lost_steps", **ok) == 0  # resumed from 150
    assert value(s, "ckpt_doctor_trainjob_lost_steps_complete", **bad) == 0
    assert value(s, "ckpt_doctor_trainjob_last_checkpoint_step", **ok) == 250
    assert value(s, "ckpt_doctor_finding", **bad, rule="fresh-start-after-restart", severity="critical") == 1
    assert value(s, "ckpt_doctor_finding", **bad, rule="ckpt-dir-not-persistent", severity="critical") == 1
    assert value(s, "ckpt_doctor_finding", **ok, rule="fresh-start-after-restart", severity="critical") is None
    states = {st: status(s, "team-bad", st) for st in ("resumed", "older_checkpoint", "fresh_start", "none", "unknown")}
    assert sorted(states.values()) == [0, 0, 0, 0, 1]  # a StateSet: exactly one state is 1
    info = [k for k in s if k[0] == "ckpt_doctor_trainjob_info"]
    assert {dict(k[1])["namespace"] for k in info} == {"team-ok", "team-bad"}  # the deleted job's series are gone


def test_the_watcher_listed_again_after_410(watched: Watch) -> None:
    s = watched.samples()
    relists = sum(v for (name, _labels), v in s.items() if name == "ckpt_doctor_watch_relists_total")
    assert relists >= 1  # the cut watches came back with a resourceVersion the server had forgotten
    assert value(s, "ckpt_doctor_scan_errors_total", stage="diagnose") == 0
    assert (value(s, "ckpt_doctor_scans_total") or 0) >= 5


def test_health_endpoints(watched: Watch) -> None:
    assert watched.get("/healthz") == (200, "ok\n")
    assert wait_for(lambda: watched.get("/readyz") == (200, "ok\n"), "/readyz ok")
    assert watched.get("/nope")[0] == 404


def test_promtool_check_metrics_lints_the_exposition(watched: Watch) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    got = subprocess.run([promtool, "check", "metrics"], input=watched.metrics_text(), capture_output=True, text=True,
                         timeout=WAIT)  # fmt: skip
    assert got.returncode == 0, got.stdout + got.stderr


def test_prometheus_scrapes_the_watcher_and_finds_the_fresh_start(watched: Watch) -> None:
    """A real Prometheus (Debian's package) scrapes the watcher; a PromQL query returns the fresh-start job."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus is not installed (Debian: apt-get install prometheus)")
    from tests.watch.conftest import free_port

    port = free_port()
    with tempfile.TemporaryDirectory(prefix="ckpt-prom-") as tmp:
        cfg = Path(tmp) / "prometheus.yml"
        cfg.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: ckpt-doctor\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{watched.port}']}}]\n"
        )
        with open(Path(tmp) / "prometheus.log", "w") as log:
            prom = subprocess.Popen(
                [binary, f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/data",
                 f"--web.listen-address=127.0.0.1:{port}", "--web.enable-lifecycle"],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            query = 'ckpt_doctor_trainjob_resume_status{status="fresh_start"} == 1'
            url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query})

            def fresh() -> list[dict[str, Any]]:
                import json

                with urllib.request.urlopen(url, timeout=5) as r:
                    doc = json.loads(r.read())
                return doc["data"]["result"] if doc.get("status") == "success" else []

            got = wait_for(fresh, "Prometheus to scrape the fresh start", every=0.5)
            assert [(r["metric"]["namespace"], r["metric"]["trainjob"]) for r in got] == [("team-bad", NAME)]
            assert got[0]["metric"]["job"] == "ckpt-doctor"
        finally:
            prom.terminate()
            try:
                prom.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait()


def test_logs_are_json_lines(watched: Watch) -> None:
    logs = watched.logs()
    assert logs and all({"time", "level", "msg"} <= set(rec) for rec in logs)
    verdicts = [r for r in logs if r["msg"] == "verdict" and r.get("namespace") == "team-bad"]
    assert verdicts[-1]["resumeStatus"] == "fresh_start" and verdicts[-1]["changed"] is True


def test_sigterm_stops_it_cleanly(watched: Watch) -> None:
    t = time.monotonic()
    assert watched.stop() == 0
    assert time.monotonic() - t < WAIT
    msgs = [r["msg"] for r in watched.logs()]
    assert "stopping" in msgs and msgs[-1] == "stopped"

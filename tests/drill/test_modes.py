"""The drill's options and safety rails: --dry-run writes nothing, confirm / skip / abort, --keep, --crash=kill,
--cross-node=cordon, runtimePatches on v2.2+, missing permissions, a flaky connection, usage errors."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ckpt_doctor.drill.console import TextConsole
from ckpt_doctor.drill.runner import Drill, Options
from tests.clirun import run_cli
from tests.drill.conftest import WRITES, Cluster, chosen_only
from tests.drill.scenarios import NAME, NS, correct, shell_pid1_short_grace
from tests.drill.test_scenarios import check_scope, run

ASSETS = Path(__file__).parent / "assets"
GUIDE = [str(ASSETS / f) for f in ("checkpoint-pvc.yaml", "checkpoint-trainingruntime.yaml", "trainjob-resume.yaml")]


def drill_in_process(c: Cluster, answers: str, **opts: Any) -> tuple[Drill, str]:
    err = io.StringIO()
    console = TextConsole(out=err, answers=io.StringIO(answers))
    o = Options(target=f"{NS}/{NAME}", kubeconfig=str(c.kubeconfig), playbook=c.playbook, **opts)
    d = Drill(o, console)
    d.run()
    return d, err.getvalue()


def test_dry_run_on_the_guides_assets_plans_every_step_without_a_write(make_cluster: Any) -> None:
    c = make_cluster(correct())
    c.kube.reset_requests()
    got = c.drill("--dry-run", "--submit", *GUIDE, "-o", "json")
    assert got.rc == 0, got.err
    assert [r for r in c.kube.requests if r.method in WRITES] == []  # no POST at all, not even an access review
    doc = got.json()
    assert doc["verdict"] == "planned" and doc["dryRun"] is True
    by = {s["id"]: s for s in doc["steps"]}
    lines = {sid: [cmd["kubectl"] for cmd in s["commands"]] for sid, s in by.items()}
    assert any("create -f" in x and "trainjob-resume.yaml" in x for x in lines["submit"])
    assert any(x.startswith(f"kubectl -n {NS} delete pod ") for x in lines["crash"])
    assert any('"suspend":true' in x for x in lines["suspend-resume"])
    assert any('"suspend":false' in x for x in lines["suspend-resume"])
    steer = [x for x in lines["cross-node"] if "--type=json" in x]
    assert steer and "podTemplateOverrides/-" in steer[0] and "gpu-node-" in steer[0]  # v2.1: the files say so
    assert any("delete trainjob sft-resumable" in x for x in lines["cleanup"])
    assert all(cmd["outcome"] == "planned" for s in doc["steps"] for cmd in s["commands"])
    # the guide's own runtime keeps bash as PID 1 (`python - <<'PY'`): preflight says so, even in a dry run
    assert by["preflight"]["status"] == "failed" and "sigterm-not-forwarded" in by["preflight"]["observed"]
    assert "--dry-run" in " ".join(by["preflight"].get("notes") or [])
    assert "kubectl -n team-a delete pod" in got.err and "kubectl cordon" not in got.err


def test_dry_run_without_a_cluster_still_prints_the_plan(tmp_path: Path) -> None:
    got = run_cli(["drill", "--dry-run", "--submit", *GUIDE, "--kubeconfig", str(tmp_path / "none")])
    assert got.rc == 0, got.err
    assert "cluster not contacted" in got.err
    assert "delete pod <trainer pod>" in got.err and '"suspend":true' in got.err
    assert "<another node>" in got.err


def _unreachable_kubeconfig(tmp_path: Path) -> Path:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = tmp_path / "kubeconfig"
    kc.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: gone\n"
        f"clusters: [{{name: gone, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: not-a-real-token-0000}}]\n"
        "contexts: [{name: gone, context: {cluster: gone, user: u, namespace: team-a}}]\n"
    )
    return kc


def test_a_cluster_never_reached_gives_a_plan_or_one_line_at_once(tmp_path: Path) -> None:
    """A kubeconfig whose server does not answer: not "lost the cluster" after half a minute of retries."""
    kc = _unreachable_kubeconfig(tmp_path)
    got = run_cli(["drill", f"{NS}/{NAME}", "--dry-run", "--kubeconfig", str(kc), "--request-timeout", "2"])
    assert got.rc == 0, got.err
    assert "cluster not reached" in got.err and "delete pod <trainer pod>" in got.err
    assert "lost the cluster" not in got.err
    got = run_cli(["drill", f"{NS}/{NAME}", "--yes", "--kubeconfig", str(kc), "--request-timeout", "2"])
    assert got.rc == 3 and "cannot reach the cluster at http://127.0.0.1:" in got.err, got.err
    assert "lost the cluster" not in got.err and "retry" not in got.err.lower()  # no rounds of back-off (36 s)


def test_dry_run_attached_names_the_pod_and_the_node(make_cluster: Any) -> None:
    c = make_cluster(correct())
    c.seed()
    pod = _wait_pod(c)
    c.kube.reset_requests()
    got = c.drill(f"{NS}/{NAME}", "--dry-run", "--cross-node", "cordon")
    assert got.rc == 0, got.err
    assert [r for r in c.kube.requests if r.method in WRITES] == []
    assert f"delete pod {pod}" in got.err
    assert "kubectl cordon gpu-node-a" in got.err and "kubectl uncordon gpu-node-a" in got.err


def test_what_the_cluster_reports_wins_over_the_trainer_version_flag(make_cluster: Any) -> None:
    """contracts.md: the cluster's record, else --trainer-version. The drill had it the other way round,
    so it steered with one version's field while its diagnoses judged by another."""
    c = make_cluster(correct())  # the fake controller's image says v2.1
    c.seed()
    _wait_pod(c)
    got = c.drill(f"{NS}/{NAME}", "--dry-run", "--trainer-version", "v2.3", "-o", "json")
    assert got.rc == 0, got.err
    doc = got.json()
    assert doc["trainerVersion"] == "v2.1"
    notes = " ".join(n for s in doc["steps"] for n in s.get("notes") or [])
    assert "--trainer-version v2.3 not used" in notes


def _wait_pod(c: Cluster) -> str:
    import time

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        pods = [p for p in c.kube.objects("pods", NS) if (p.get("status") or {}).get("phase") == "Running"]
        if pods:
            return str(pods[0]["metadata"]["name"])
        time.sleep(0.02)
    raise AssertionError("the trainer never ran")


def test_skip_declines_a_step_and_abort_stops_the_drill(make_cluster: Any) -> None:
    c = make_cluster(correct())
    c.seed()
    before = c.state()
    # crash: skip (declined); suspend-resume: yes to suspend, then abort at the resume question
    d, err = drill_in_process(c, "s\ny\na\n")
    r = d.result
    by = {s.id: s for s in r.steps}
    assert by["crash"].status == "skipped" and by["crash"].commands[0].outcome == "declined"
    assert by["suspend-resume"].status == "stopped"
    assert by["cross-node"].status == "not_run"
    assert by["cleanup"].status == "passed", by["cleanup"].observed
    assert r.verdict == "stopped" and d.exit_code() == 130
    assert c.state() == before  # the suspend was undone: spec.suspend back to false
    assert not c.kube.get("trainjobs", NS, NAME)["spec"].get("suspend")
    assert "[y]es / [s]kip" in err


def test_no_answer_stops_before_any_change(make_cluster: Any) -> None:
    c = make_cluster(correct())
    c.seed()
    d, _ = drill_in_process(c, "")
    assert d.result.verdict == "stopped"
    assert [w for w in c.writes() if "selfsubjectaccessreviews" not in w[1]] == []


def test_keep_leaves_what_it_submitted_unmarked(make_cluster: Any) -> None:
    c = make_cluster(correct())
    got = c.drill("--submit", *map(str, c.files()), "--yes", "--keep", "--steps", "first-checkpoint", "-o", "json")
    assert got.rc == 3 and chosen_only(got.json(), "submit", "first-checkpoint", "cleanup"), got.err
    tj = c.kube.get("trainjobs", NS, NAME)
    assert tj is not None and not any(k.startswith("drill.") for k in tj["metadata"].get("annotations") or {})
    pvc = c.kube.get("persistentvolumeclaims", NS, "ckpt-pvc")
    assert pvc is not None and not any(k.startswith("drill.") for k in pvc["metadata"].get("annotations") or {})


def test_kill_and_cordon_stay_in_scope(make_cluster: Any) -> None:
    c = make_cluster(correct())
    rc, doc, err = run(c, False, "--crash", "kill", "--cross-node", "cordon")
    assert rc == 0, err
    crash = next(s for s in doc["steps"] if s["id"] == "crash")
    assert "kill 1" in crash["commands"][0]["kubectl"]
    assert any(p.endswith("/exec") for _, p in [(r.method, r.path) for r in c.kube.requests])
    assert not (c.kube.get("nodes", None, "gpu-node-a")["spec"].get("unschedulable"))
    check_scope(c, doc, False)


def test_kill_on_a_shell_as_pid1_is_ignored(make_cluster: Any) -> None:
    c = make_cluster(shell_pid1_short_grace(), crash=2.0)
    rc, doc, err = run(c, False, "--skip", "preflight", "--crash", "kill", "--steps", "crash")
    assert rc == 1, err
    crash = next(s for s in doc["steps"] if s["id"] == "crash")
    assert crash["status"] == "failed" and "did not exit on SIGTERM" in crash["observed"], crash


def test_v22_steers_with_runtime_patches(make_cluster: Any) -> None:
    c = make_cluster(correct(), version="v2.2")
    rc, doc, err = run(c, False, "--steps", "first-checkpoint,cross-node")
    assert rc == 3 and chosen_only(doc, "first-checkpoint", "cross-node"), err
    assert doc["trainerVersion"] == "v2.2"
    step = next(s for s in doc["steps"] if s["id"] == "cross-node")
    assert any("/spec/runtimePatches" in cmd["kubectl"] and "ckpt-doctor.io/drill" in cmd["kubectl"]
               for cmd in step["commands"])
    assert "runtimePatches" not in (c.kube.get("trainjobs", NS, NAME)["spec"])


def test_missing_permission_fails_preflight_before_any_change(make_cluster: Any) -> None:
    c = make_cluster(correct())
    c.seed()
    c.kube.fault("delete", "pods", status=403)
    got = c.drill(f"{NS}/{NAME}", "--yes", "-o", "json")
    assert got.rc == 3  # the drill cannot run: an error, not a verdict on the job
    pre = got.json()["steps"][0]
    assert pre["status"] == "error" and "delete pods" in pre["observed"]
    assert [w for w in c.writes() if "selfsubjectaccessreviews" not in w[1]] == []
    ok = c.drill(f"{NS}/{NAME}", "--yes", "--crash", "kill", "--steps", "preflight,first-checkpoint", "-o", "json")
    assert chosen_only(ok.json(), "preflight", "first-checkpoint"), ok.err  # --crash=kill needs exec, not delete


def test_a_flaky_connection_is_retried(make_cluster: Any) -> None:
    c = make_cluster(correct())
    c.kube.fault("patch", "trainjobs", status=503, times=2)
    rc, doc, err = run(c, False, "--steps", "suspend-resume")
    assert rc == 3 and chosen_only(doc, "suspend-resume"), err
    assert "retrying" in err


def test_usage_errors() -> None:
    assert run_cli(["drill"]).rc == 2
    assert run_cli(["drill", "a/b", "--submit", "x.yaml"]).rc == 2
    bad = run_cli(["drill", "a/b", "--skip", "cleanup", "--kubeconfig", "/nonexistent"])
    assert bad.rc == 2 and "always runs" in bad.err
    unknown = run_cli(["drill", "a/b", "--steps", "nap", "--kubeconfig", "/nonexistent"])
    assert unknown.rc == 2 and "unknown step nap" in unknown.err


def test_inputs_and_cluster_errors_exit_3(make_cluster: Any, tmp_path: Path) -> None:
    c = make_cluster(correct())
    missing = c.drill(f"{NS}/nope", "--yes")
    assert missing.rc == 3 and "not found" in missing.err
    assert run_cli(["drill", "a/b", "--yes", "--kubeconfig", str(tmp_path / "none")]).rc == 3
    (tmp_path / "x.yaml").write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n")
    secret = c.drill("--submit", str(tmp_path / "x.yaml"), "--yes")
    assert secret.rc == 3 and "exactly one TrainJob" in secret.err


def test_a_save_without_a_log_line_is_found_on_the_volume(make_cluster: Any) -> None:
    from tests.drill.controller import Program
    from tests.drill.scenarios import Case

    base = correct()
    case = Case("quiet-saves", base.build, Program(print_saves=False), ("passed", None), ("passed", None))
    c = make_cluster(case)
    c.seed()
    got = c.drill(f"{NS}/{NAME}", "--yes", "--steps", "first-checkpoint", "-o", "json")
    assert chosen_only(got.json(), "first-checkpoint"), got.err
    step = next(s for s in got.json()["steps"] if s["id"] == "first-checkpoint")
    assert "no save line" in step["observed"] and "checkpoint-50" in step["observed"]
    assert any(cmd["kubectl"].endswith("ls -1 /mnt/ckpt/sft-resumable") for cmd in step["commands"])


def _drill_without_terminal(argv: list[str]) -> tuple[int, str, str]:
    """The CLI in a child process whose stdin is /dev/null (no terminal, as under cron, CI or `</dev/null`)."""
    from tests.drill.conftest import drill_subprocess

    p = drill_subprocess(argv)
    out, err = p.communicate(timeout=120)
    return p.returncode, out, err


def test_no_terminal_and_no_yes_is_refused_before_anything(make_cluster: Any) -> None:
    """A drill that would ask, with nobody to answer, stops with a usage error before its first request."""
    c = make_cluster(correct())
    c.seed()
    c.kube.reset_requests()
    rc, out, err = _drill_without_terminal([f"{NS}/{NAME}", "--kubeconfig", str(c.kubeconfig),
                                            "--playbook", str(c.playbook)])
    assert rc == 2, err
    assert err.count("\n") == 1 and "stdin is not a terminal" in err and "--yes" in err and "--dry-run" in err, err
    assert out == ""
    assert c.kube.requests == []  # not even preflight's reads: nothing ran


def test_no_terminal_is_fine_when_nothing_will_be_asked(make_cluster: Any) -> None:
    """--dry-run asks nothing, --cleanup never asks, and an attached drill of read-only steps has no change to ask
    about: none of them is refused for want of a terminal."""
    c = make_cluster(correct())
    c.seed()
    base = ["--kubeconfig", str(c.kubeconfig), "--playbook", str(c.playbook)]
    rc, _, err = _drill_without_terminal([f"{NS}/{NAME}", "--dry-run", *base])
    assert rc == 0 and "stdin is not a terminal" not in err, err
    rc, _, err = _drill_without_terminal(["--cleanup", "-n", NS, *base])
    assert rc == 0 and "stdin is not a terminal" not in err, err
    d = Drill(Options(target=f"{NS}/{NAME}", playbook=c.playbook, steps=("preflight", "first-checkpoint")),
              TextConsole(out=io.StringIO()))
    assert not d.asks()
    assert Drill(Options(target=f"{NS}/{NAME}", playbook=c.playbook), TextConsole(out=io.StringIO())).asks()
    assert not Drill(Options(target=f"{NS}/{NAME}", playbook=c.playbook, yes=True),
                     TextConsole(out=io.StringIO())).asks()
    assert Drill(Options(submit=tuple(GUIDE), playbook=c.playbook, steps=("preflight",)),
                 TextConsole(out=io.StringIO())).asks()  # --submit creates: that is asked


def test_text_mode_writes_nothing_on_stdout(make_cluster: Any) -> None:
    """The drill talks on stderr; stdout carries only -o json (docs/drill.md says so)."""
    c = make_cluster(correct())
    c.seed()
    rc, out, err = _drill_without_terminal([f"{NS}/{NAME}", "--dry-run", "--kubeconfig", str(c.kubeconfig),
                                            "--playbook", str(c.playbook)])
    assert rc == 0 and out == "" and "drill d-" in err, err

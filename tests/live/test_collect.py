"""`collect` writes a bundle (contracts §2) that `diagnose --bundle` reads back to the same findings."""

from __future__ import annotations

import tarfile
from pathlib import Path

from ruamel.yaml import YAML

from tests.fakeapi.discovery import ResourceType
from tests.live.conftest import Live, findings, run_cli
from tests.live.scenario import NAME, NS, pod_name


def _members(archive: Path) -> dict[str, bytes]:
    out = {}
    with tarfile.open(archive) as tar:
        for m in tar.getmembers():
            if m.isfile():
                f = tar.extractfile(m)
                assert f is not None
                out[m.name] = f.read()
    return out


def _kubeconfig_secrets(path: Path) -> list[str]:
    doc = YAML(typ="safe").load(path.read_text()) or {}
    keys = ("token", "client-key-data", "password", "client-certificate-data")
    return [str(u["user"][k]) for u in doc.get("users") or [] for k in keys if (u.get("user") or {}).get(k)]


def test_collect_reads_back_to_the_same_findings(live: Live, tmp_path: Path) -> None:
    out = tmp_path / "evidence.tar.gz"
    got = live.cli("collect", live.target, "-o", str(out))
    assert got.rc == 0, got.err
    assert f"wrote {out} for TrainJob {live.target}" in got.err
    files = _members(out)
    root = next(iter(files)).split("/")[0]
    assert root == "evidence" and all(name.startswith("evidence/") for name in files)
    meta = YAML(typ="safe").load(files["evidence/bundle.yaml"])
    assert meta["apiVersion"] == "ckpt-doctor/v1" and meta["kind"] == "Bundle"
    assert meta["target"] == dict(zip(("namespace", "name"), live.target.split("/"), strict=True))
    assert meta["collectedAt"].endswith("Z") and isinstance(meta["redactions"], int)
    assert set(meta["cluster"]) >= {"context", "server", "serverVersion"}
    assert isinstance(meta["notCollected"], list)
    offline = run_cli(["diagnose", "--bundle", str(out), "-o", "json"])
    online = live.cli("diagnose", live.target, "-o", "json")
    assert offline.rc == online.rc
    assert findings(offline.json()) == findings(online.json())
    for secret in _kubeconfig_secrets(live.kubeconfig):  # credentials never reach the bundle
        assert not any(secret.encode() in data for data in files.values())
    if live.fake is None:
        return
    assert meta["cluster"]["context"] == "fake" and meta["cluster"]["server"] == live.kube.url
    assert meta["notCollected"] == []
    p0 = pod_name(NAME, 0)
    names = set(files)
    assert {f"evidence/logs/{p0}/node.log", f"evidence/logs/{p0}/node.previous.log"} <= names
    assert {
        "evidence/objects/trainjobs.yaml",
        "evidence/objects/pods.yaml",
        "evidence/objects/events.yaml",
        "evidence/objects/persistentvolumeclaims.yaml",
        "evidence/objects/nodes.yaml",
    } <= names
    pods = list(YAML(typ="safe").load_all(files["evidence/objects/pods.yaml"]))
    assert sorted(p["metadata"]["name"] for p in pods) == sorted(pod_name(NAME, i) for i in range(3))
    assert all(p["apiVersion"] == "v1" and p["kind"] == "Pod" for p in pods)
    events = [e["metadata"]["name"] for e in YAML(typ="safe").load_all(files["evidence/objects/events.yaml"])]
    assert "sft-run.old-pod" in events  # a deleted attempt-0 pod's event, matched by the JobSet naming
    assert "sft-run.stale" not in events and "other.pod" not in events  # another uid, another TrainJob
    assert files[f"evidence/logs/{p0}/node.previous.log"].endswith(b"NCCL communicator was aborted\n")


def test_collect_to_a_directory(live: Live, tmp_path: Path) -> None:
    live.require_fake()
    out = tmp_path / "dir-bundle"
    assert live.cli("collect", live.target, "-o", str(out), "-q").rc == 0
    assert (out / "bundle.yaml").is_file() and (out / "objects" / "trainjobs.yaml").is_file()
    again = live.cli("collect", live.target, "-o", str(out), "-q")
    assert again.rc == 3 and "exists and is not empty" in again.err
    nowhere = live.cli("collect", live.target, "-o", str(tmp_path / "no" / "such" / "x.tgz"), "-q")
    assert nowhere.rc == 3 and "does not exist" in nowhere.err


def test_gaps_travel_with_the_bundle(live: Live, tmp_path: Path) -> None:
    kube = live.kube
    kube.fault("list", "events", status=403)
    kube.fault("get", "pods/log", name=pod_name(NAME, 1), status=403)
    out = tmp_path / "gappy.tgz"
    got = live.cli("collect", live.target, "-o", str(out))
    assert got.rc == 0
    assert "not collected: events: forbidden: cannot list events in team-a" in got.err
    meta = YAML(typ="safe").load(_members(out)["gappy/bundle.yaml"])
    assert {"what": "events", "reason": "forbidden: cannot list events in team-a"} in meta["notCollected"]
    online = live.cli("diagnose", live.target, "-o", "json")
    offline = run_cli(["diagnose", "--bundle", str(out), "-o", "json"])
    reasons = lambda doc: {f["rule"]: f.get("reason") for f in doc["findings"] if f["status"] == "not_evaluated"}  # noqa: E731
    assert reasons(online.json()) == reasons(offline.json())
    assert findings(online.json()) == findings(offline.json())


def test_trainer_version_is_read_from_the_controller_image(live: Live, tmp_path: Path) -> None:
    kube = live.kube
    kube.register(ResourceType("apps", "v1", "deployments", "Deployment"))
    kube.add(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "kubeflow-trainer-controller-manager", "namespace": "kubeflow-system"},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "manager", "image": "ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.1.0"}
                        ]
                    }
                }
            },
        }
    )
    out = tmp_path / "versioned.tgz"
    assert live.cli("collect", live.target, "-o", str(out), "-q").rc == 0
    meta = YAML(typ="safe").load(_members(out)["versioned/bundle.yaml"])
    assert meta["cluster"]["trainerVersion"] == "v2.1.0"
    doc = live.cli("diagnose", live.target, "-o", "json").json()
    # live, the cluster said it (the text says "the cluster reports v2.1.0"; the JSON said "bundle"); the bundle
    # collected from it says it in its bundle.yaml
    assert (doc["trainerVersion"], doc["trainerVersionSource"]) == ("v2.1", "cluster")
    offline = run_cli(["diagnose", "--bundle", str(out), "-o", "json"]).json()
    assert (offline["trainerVersion"], offline["trainerVersionSource"]) == ("v2.1", "bundle")
    assert findings(doc) == findings(offline)


def test_quiet_and_progress(live: Live, tmp_path: Path) -> None:
    live.require_fake()
    quiet = live.cli("collect", live.target, "-o", str(tmp_path / "q.tgz"), "-q")
    assert quiet.rc == 0 and quiet.err == ""


def test_progress_lines_when_slow(tmp_path: Path) -> None:
    import io

    from ckpt_doctor.sources.live import Progress

    buf = io.StringIO()
    p = Progress(stream=buf, delay=0.0)
    p.stage("reading 4 container logs", total=4)
    for _ in range(4):
        p.advance()
    p.close()
    assert buf.getvalue().splitlines()[0] == "ckpt-doctor: reading 4 container logs 0/4"
    assert buf.getvalue().splitlines()[-1] == "ckpt-doctor: reading 4 container logs 4/4"
    silent = io.StringIO()
    q = Progress(quiet=True, stream=silent, delay=0.0)
    q.stage("x", total=1)
    q.advance()
    q.note("y")
    assert silent.getvalue() == ""


def test_bundle_namespace_of_logs(live: Live, tmp_path: Path) -> None:
    live.require_fake()
    out = tmp_path / "ns.tgz"
    assert live.cli("collect", f"{NS}/{NAME}", "-o", str(out), "-q").rc == 0
    from ckpt_doctor.sources.bundle import open_bundle

    with open_bundle(out) as snap:
        assert {ref.namespace for ref in snap.logs.values()} == {NS}
        assert snap.meta["target"] == {"namespace": NS, "name": NAME}


TRICKY = [
    "1e-4",
    "1E3",
    "0o17",
    "0x1F",
    ".5",
    "+12",
    "-3",
    "1_000",
    "True",
    "yes",
    "no",
    "on",
    "off",
    "~",
    "null",
    "=",
    "<<",
    ".inf",
    ".NaN",
    "2026-11-30T10:00:00Z",
    "12:30",
    "",
    " leading",
    "trailing ",
    "a: b",
    "- x",
    "#comment",
    "multi\nline\n",
    "multi\nline no end",
    "  indented\nblock\n",
    "tab\tin",
    "ünïcødé",
    "'q'",
    '"dq"',
    "x\r\ny",
    "\x85nel",
    "key: [1, 2]",
    "*alias",
    "&anchor",
    "!tag",
    "%directive",
    "@at",
    "`tick`",
]


def test_yaml_writer_round_trips_through_the_bundle_reader() -> None:
    from ckpt_doctor.sources.bundle_write import _yaml_docs
    from ckpt_doctor.yamlio import iter_documents

    objs = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"cm{i}"},
            "data": {"v": s, s or "empty": [s, {"n": 1, "f": 1.5, "b": True, "z": None}]},
        }
        for i, s in enumerate(TRICKY)
    ]
    assert list(iter_documents(_yaml_docs(objs).decode(), "test")) == objs

"""Secrets stay home: not one planted secret, in any encoding, in anything any way out of ckpt-doctor writes.

The corpus (tests/security/corpus.py) plants more than 170 credentials in env, args, scripts, ConfigMaps,
annotations, logs, events and the kubeconfig; tests/security/surfaces.py runs every way out against it (collect and
collect --follow bundles, every output format of diagnose from a hand-made bundle, a collected bundle and the live
cluster, lint, lint --fix, explain-error, report, the app's export and screenshots, error lines) and keeps every
byte each one wrote. Each surface is searched for every planted secret and its base64 and URL-encoded forms.
"""

from __future__ import annotations

import json
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from tests.clirun import run_cli
from tests.security.corpus import NEAR_MISS_TEXT, NEAR_MISSES, PROBE_NEAR_MISSES, Corpus, build, leaks
from tests.security.surfaces import run_all

WAYS_OUT = [
    *(f"diagnose --bundle (hand-made) -o {f}" for f in ("text", "json", "markdown", "sarif", "junit")),
    "collect",
    "collect --follow",
    *(f"diagnose --bundle (collected) -o {f}" for f in ("text", "json", "markdown", "sarif", "junit")),
    *(f"diagnose live -o {f}" for f in ("text", "json", "markdown", "sarif", "junit")),
    "error: unreachable cluster",
    "error: collect, unreachable cluster",
    *(f"lint -o {f}" for f in ("text", "json", "sarif", "junit")),
    "lint --fix --dry-run",
    "lint --fix",
    *(f"explain-error -o {f}" for f in ("text", "json", "markdown")),
    "app: export and screenshots",
]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes], Corpus]:
    return run_all(tmp_path_factory.mktemp("leaks"))


def test_the_corpus_plants_over_170_secrets_everywhere_in_every_encoding(written: tuple[dict, Corpus]) -> None:
    _, c = written
    assert len(c.plants) >= 170
    assert len({p.secret for p in c.plants}) == len(c.plants)  # each one findable on its own
    where = Counter(p.where for p in c.plants)
    assert set(where) >= {"env", "args", "script", "configmap", "annotation", "log", "event", "kubeconfig", "listing"}
    kinds = Counter(p.kind for p in c.plants)
    assert set(kinds) >= {
        "by-name",
        "flag",
        "login",
        "url",
        "header",
        "netrc",
        "key-block",
        "cred-json",
        "shape",
        "base64",
        "urlencoded",
        "grammar",
        "config",
        "python-call",
        "bytes",
        "nested-json",
        "next-line",
        "wrapped",
    }
    # every class issue 22's probe saw leak, each planted at least once
    classes = {p.cls for p in c.plants}
    assert classes >= {
        "sshpass-array",
        "mysql-event",
        "7z",
        "unzip",
        "smbclient",
        "lftp",
        "sudo-stdin",
        "mc-alias",
        "rclone",
        "maven-settings",
        "netrc",
        "pgpass",
        "pip-conf",
        "docker-config",
        "auth-tuple",
        "kw",
        "botocore-headers",
        "doubly",
        "botocore-signature",
        "yaml",
        "wrapped-line",
    }


@pytest.mark.parametrize("surface", WAYS_OUT)
def test_no_planted_secret_leaves_by(surface: str, written: tuple[dict, Corpus]) -> None:
    outs, c = written
    assert surface in outs, f"{surface} was not run"
    data = outs[surface]
    assert data and not data.startswith(b"not run:"), data[:200]
    leaked = leaks(data, c.plants)
    shown = []
    for p in leaked[:5]:
        form = next(f for f in p.forms() if f.encode() in data)
        at = data.find(form.encode())
        shown.append(f"{p.where}/{p.kind}: …{data[max(0, at - 60) : at + 40]!r}…")
    assert leaked == [], "\n".join(shown)


def test_report_leaks_nothing_either(written: tuple[dict, Corpus]) -> None:
    outs, c = written
    reports = [k for k in outs if k.startswith("report")]
    if not reports:
        pytest.skip("no report verb in this build")
    for k in reports:
        assert leaks(outs[k], c.plants) == [], k


def test_the_bundle_keeps_what_the_facts_need(written: tuple[dict, Corpus]) -> None:
    outs, _ = written
    bundle = outs["collect"]
    for name, value in NEAR_MISSES.items():
        assert f"name: {name}".encode() in bundle and value.encode() in bundle, name
    for line in NEAR_MISS_TEXT:
        assert line.encode() in bundle, line
    assert b"HF_HUB_TOKEN_FROM_SECRET" in bundle and b"secretKeyRef" in bundle and b"key: token" in bundle


@pytest.mark.parametrize("near", PROBE_NEAR_MISSES)
def test_near_misses_of_the_new_classes_survive(near: str, written: tuple[dict, Corpus]) -> None:
    """No over-redaction: an S3 key after `'Key':`, step numbers, rule ids, kubectl commands, a tool's flags that
    carry no password, a Maven path, a key whose next line is a reference: all reach the bundle as written."""
    outs, _ = written
    bundle = outs["collect"]
    for line in near.splitlines():
        assert line.strip().encode() in bundle, line


def test_redaction_keeps_the_field_path_and_the_rest_of_the_line(tmp_path: Path) -> None:
    c = build()
    bundle = c.scenario.write(tmp_path / "b")
    doc = run_cli(["diagnose", "--bundle", str(bundle), "-o", "json"]).json()
    evidence = [ev for f in doc["findings"] for ev in f["evidence"]]
    hf = [ev for ev in evidence if ev.get("path") == "spec.trainer.env[name=HF_TOKEN]"]
    assert hf and hf[0]["value"] == "<redacted:env>" and hf[0]["object"] == "TrainJob/team-a/sft-secrets"
    text = run_cli(["diagnose", "--bundle", str(bundle), "-o", "text", "-v"]).out
    assert "spec.trainer.env[name=PGPASSWORD] = <redacted:env>" in text
    quoted = [str(ev["text"]) for ev in evidence if ev.get("type") == "log"]
    saved = [t for t in quoted if "checkpoint-100 (mirrored" in t]
    fresh = [t for t in quoted if "starting fresh (" in t]
    assert saved and fresh, quoted  # the lines are quoted, the readers still understood them
    assert saved[0].endswith("(mirrored to https://mirror:<redacted:url-credentials>@backup.internal)")
    assert fresh[0].endswith("starting fresh (Authorization: Bearer <redacted:header>)")


def test_the_bundle_counts_its_redactions(written: tuple[dict, Corpus], tmp_path: Path) -> None:
    outs, c = written
    assert b"<redacted:" in outs["collect"]
    start = outs["collect"].index(b"wrote ")
    line = outs["collect"][start : outs["collect"].index(b"\n", start)].decode()
    n = int(line.split(" redactions")[0].rsplit(" ", 1)[1])
    assert n >= len([p for p in c.plants if p.where not in ("kubeconfig", "explain", "lint")]) - 5, line


def test_a_collected_bundle_diagnoses_like_the_live_cluster(written: tuple[dict, Corpus]) -> None:
    outs, _ = written
    live = json.loads(outs["diagnose live -o json"])
    collected = json.loads(outs["diagnose --bundle (collected) -o json"])

    def key(doc: dict) -> set[tuple[str, str]]:
        return {(f["rule"], f["status"]) for f in doc["findings"]}

    assert key(live) == key(collected)


def test_collect_no_redact_still_warns(tmp_path: Path) -> None:
    """The one way to write secrets out is explicit: --no-redact prints a warning and counts 0 redactions."""
    from tests.fakeapi.server import FakeKube
    from tests.security.corpus import kubeconfig

    c = build()
    bundle = c.scenario.write(tmp_path / "b")
    with FakeKube() as kube:
        kube.load_bundle(bundle)
        kc = kubeconfig(tmp_path / "kc", kube.url, c)
        out = tmp_path / "raw.tgz"
        got = run_cli(["collect", "sft-secrets", "-o", str(out), "--no-redact", "-q", "--kubeconfig", str(kc)])
    assert got.rc == 0 and "WARNING: --no-redact" in got.err
    with tarfile.open(out) as tar:
        meta = tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("bundle.yaml")))
        assert meta is not None and b"redactions: 0" in meta.read()


def test_checkpoint_listings_go_out_redacted_not_dropped(written: tuple[dict, Corpus]) -> None:
    """The listing, its df and its pointer file reach the bundles (collect, --follow) and the findings, through the
    one redactor: the paths stay, what they hold of a credential does not."""
    outs, _ = written
    for surface in ("collect", "collect --follow"):
        data = outs[surface]
        assert b"# container: node" in data and b"999000" in data, surface  # the listing's header, its df
        assert b"checkpoint-100/trainer_state.json" in data and b"sync-password=" in data, surface
    assert b"checkpoint-100" in outs["diagnose --bundle (hand-made) -o json"]

"""One redactor for everything that leaves the cluster: planted secrets never reach a bundle or a report."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from ckpt_doctor.sources.redact import Redactor, sensitive_name
from tests.fakeapi.server import FakeKube
from tests.live.conftest import REAL_KUBECONFIG, findings, run_cli
from tests.live.scenario import NAME, NS, Scenario, event

PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7plantedPEMbody"
# (shape, secret value, the text it is planted in)
SHAPES: list[tuple[str, str, str]] = [
    ("hf-token", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "HF_TOKEN={s}"),
    ("aws-access-key-id", "AKIAIOSFODNN7PLANTED", "aws_access_key_id={s}"),
    ("aws-secret-key", "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", "aws_secret_access_key = {s}"),
    (
        "gcp-private-key",
        PEM_BODY,
        '{{"private_key": "-----BEGIN PRIVATE KEY-----\\n{s}\\n-----END PRIVATE KEY-----\\n"}}',
    ),
    ("gcp-api-key", "AIzaSyPLANTED-abcdefghijklmnopqrstuvwxy", "maps key {s} loaded"),
    ("gcp-oauth", "ya29.a0AfH6SMBplantedAccessTokenValue0123", "token source returned {s}"),
    (
        "azure-conn-string",
        "PlantedAccountKey0123456789abcdefABCDEF==",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};EndpointSuffix=core.windows.net",
    ),
    (
        "azure-sas",
        "Pl4ntedSasSignature0123456789abcd%3D",
        "https://acct.blob.core.windows.net/data?sv=2022&sp=r&sig={s}",
    ),
    ("github-token", "ghp_PlantedGithubToken0123456789abcdefghij", "git clone with {s}"),
    ("github-pat", "github_pat_11PLANTED0123456789_abcdefghijklmnopqrstuvwxyz", "GH auth {s}"),
    ("gitlab-token", "glpat-PlantedGitlab0123456789", "registry login {s}"),
    ("slack-token", "xoxb-123456789012-PlantedSlackBot", "notify via {s}"),
    ("slack-webhook", "https://hooks.slack.com/services/T0PLANT/B0PLANT/PlantedWebhookSecret", "alerts to {s}"),
    ("jwt", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlUGxhbnRlZA", "service account token {s}"),
    ("bearer", "PlantedOpaqueBearer0123456789", "curl -H 'Authorization: Bearer {s}' https://api"),
    ("basic-auth", "cGxhbnRlZDpwYXNzd29yZA==", "Authorization: Basic {s}"),
    ("url-credentials", "Pl4ntedUrlPassw0rd", "tracking uri https://alice:{s}@mlflow.example.com/"),
    ("password-assignment", "PlantedPassw0rdValue", "connecting with password={s}"),
    ("api-key-assignment", "0123456789abcdefPlantedWandbKey", "wandb_api_key: {s}"),
    ("openai-key", "sk-proj-PlantedOpenAIKey0123456789abcdef", "OPENAI_API_KEY={s}"),
    ("pypi-token", "pypi-AgEIcHlwaS5vcmcPlantedPypiToken0123456789abcdefghijklmnop", "twine upload -p {s}"),
    ("databricks", "dapi0123456789abcdef0123456789abcdef", "databricks token {s}"),
    ("kubeconfig-key", "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCnBsYW50ZWQ=", "    client-key-data: {s}"),
    ("kubeconfig-token", "PlantedKubeconfigBearerToken0123", "    token: {s}"),
    ("docker-auth", "cGxhbnRlZDpkb2NrZXJwYXNz", '{{"auths": {{"ghcr.io": {{"auth": "{s}"}}}}}}'),
    ("secret-flag", "PlantedFlagSecret42", "train.py --hub_token {s} --epochs 3"),
]
# (env name, value): values with no tell-tale shape, redacted because of the variable's name
NAMED = {
    "MLFLOW_TRACKING_PASSWORD": "correct-horse-battery-staple",
    "WANDB_API_KEY": "0c1d2e3f4a5b6c7d8e9f00112233445566778899",
    "AWS_SECRET_ACCESS_KEY": "pLaNtEd/SecretAccessKey/0123456789abcdefgh",
    "AZURE_STORAGE_CONNECTION_STRING": "AccountName=acct;AccountKey=NamedOnlyKey==",
    "DB_PWD": "tr0ub4dor&3",
    "SMTP_PASS": "smtp-pass-planted",
    "HF_TOKEN": "hf_NamedAndShapedToken0123456789abcdefgh",
}
KEEP = [  # must survive untouched: the facts need them
    "TOKENIZERS_PARALLELISM=false",
    "max_tokens: 512",
    "tokenizer: meta-llama/Llama-3.1-8B",
    "pad_token: <pad>",
    "PWD=/workspace",
    "secretName: hf-secret",
    "CKPT_DIR=/ckpt/sft-run",
    "--output_dir /ckpt/sft-run",
    "[checkpoint] saved /ckpt/sft-run/checkpoint-200",
    "s3://bucket/path/checkpoint-100",
    "--save_steps 100",
    "Loading model from /ckpt/sft-run/checkpoint-300.",
    "https://huggingface.co/meta-llama",
    "step 42 loss 1.234",
    "the bearer of bad news",
    "basic configuration",
    "4000 tokens/s",
]


@pytest.mark.parametrize(("shape", "secret", "text"), SHAPES, ids=[s[0] for s in SHAPES])
def test_each_shape_is_redacted(shape: str, secret: str, text: str) -> None:
    r = Redactor()
    out = r.text(text.format(s=secret))
    assert secret not in out and "<redacted:" in out
    assert r.count >= 1


@pytest.mark.parametrize("text", KEEP)
def test_what_facts_need_is_kept(text: str) -> None:
    r = Redactor()
    assert r.text(text) == text and r.count == 0


def test_names() -> None:
    for name in NAMED:
        assert sensitive_name(name), name
    for name in (
        "TOKENIZERS_PARALLELISM",
        "PWD",
        "CKPT_DIR",
        "secretName",
        "max_tokens",
        "pad_token",
        "OUTPUT_DIR",
        "BYPASS_CACHE",
    ):
        assert not sensitive_name(name), name


def test_objects_env_args_json_strings() -> None:
    r = Redactor()
    pod = {
        "metadata": {
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(
                    {"spec": {"containers": [{"env": [{"name": "DB_PASSWORD", "value": "lastApplied-S3cret"}]}]}}
                ),
                "example.com/api-token": "annot-token-value-123",
            }
        },
        "spec": {
            "containers": [
                {
                    "name": "node",
                    "env": [{"name": k, "value": v} for k, v in NAMED.items()]
                    + [
                        {"name": "CKPT_DIR", "value": "/ckpt/x"},
                        {"name": "HF_TOKEN_FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "t"}}},
                    ],
                    "args": ["--db-password", "flag-next-Secret", "--epochs", "3", "--output_dir", "/ckpt/x"],
                }
            ]
        },
    }
    out = json.dumps(r.obj(pod))
    for secret in [*NAMED.values(), "lastApplied-S3cret", "annot-token-value-123", "flag-next-Secret"]:
        assert secret not in out, secret
    assert "/ckpt/x" in out and '"secretKeyRef": {"name": "hf", "key": "t"}' in out and '"3"' in out
    assert r.count == len(NAMED) + 3


def test_extra_patterns_and_disabled() -> None:
    r = Redactor([r"employee-\d{6}", r"project=(\w+)"])
    assert r.text("user employee-123456 project=apollo ok") == "user <redacted:custom> project=<redacted:custom> ok"
    off = Redactor(enabled=False)
    assert off.text("HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789").endswith("0123456789")
    from ckpt_doctor.errors import UsageError

    with pytest.raises(UsageError, match="not a valid RE2 pattern"):
        Redactor(["(unclosed"])


def test_log_bytes_keep_invalid_utf8() -> None:
    r = Redactor()
    data = b"\xff\xfe bad bytes then HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n\x80end"
    out = r.bytes(data)
    assert out.startswith(b"\xff\xfe bad bytes") and out.endswith(b"\n\x80end") and b"hf_AbCd" not in out


# -- integration: plant every shape everywhere, collect, diagnose ------------------------------------


def _planted() -> Scenario:
    lines = [text.format(s=secret) for _, secret, text in SHAPES]
    config = "\n".join(["output_dir: /ckpt/sft-run", "save_steps: 100", *lines[:12]]) + "\n"
    return Scenario(
        pods=2,
        secrets=dict(NAMED),
        args=["--mlflow-uri", "https://alice:Pl4ntedUrlPassw0rd@mlflow.example.com/", "--db-password", "ArgNextSecret"],
        config_text=config,
        log_lines=lines,
    )


@pytest.fixture
def planted(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[FakeKube, Path]:
    if REAL_KUBECONFIG:
        pytest.skip("plants secrets: fake API server only")
    kube: FakeKube = request.getfixturevalue("fake")  # started; stopped and checked for server bugs after the test
    sc = _planted()
    sc.load(kube)
    tj = kube.get("trainjobs", NS, NAME)
    assert tj is not None
    tj["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(
            {
                "spec": {
                    "trainer": {
                        "env": [{"name": "MLFLOW_TRACKING_PASSWORD", "value": NAMED["MLFLOW_TRACKING_PASSWORD"]}]
                    }
                }
            }
        )
    }
    kube.update(tj)
    kube.add(
        event(
            "sft-run.leak",
            "TrainJob",
            NAME,
            "Failed",
            f"pull failed: {SHAPES[8][2].format(s=SHAPES[8][1])}",
            tj["metadata"]["uid"],
            "Warning",
        )
    )
    return kube, kube.kubeconfig(tmp_path / "kc", namespace=NS)


ALL_SECRETS = [s for _, s, _ in SHAPES] + list(NAMED.values()) + ["ArgNextSecret"]


def test_planted_secrets_never_reach_a_bundle_or_a_report(planted: tuple[FakeKube, Path], tmp_path: Path) -> None:
    _, kc = planted
    out = tmp_path / "evidence.tar.gz"
    got = run_cli(["collect", NAME, "-o", str(out), "--kubeconfig", str(kc)])
    assert got.rc == 0, got.err
    blob = b""
    with tarfile.open(out) as tar:
        for m in tar.getmembers():
            if m.isfile():
                f = tar.extractfile(m)
                assert f is not None
                blob += f.read()
    leaked = [s for s in ALL_SECRETS if s.encode() in blob]
    assert leaked == []
    assert b"redactions: 0" not in blob and b"<redacted:" in blob
    assert b"/ckpt/sft-run" in blob and b"TOKENIZERS_PARALLELISM" in blob  # what the facts need stays
    reports = [
        run_cli(["diagnose", NAME, "--kubeconfig", str(kc), "-o", fmt, "-v"]) for fmt in ("text", "json", "markdown")
    ]
    reports.append(run_cli(["diagnose", "--bundle", str(out), "-o", "json", "-v"]))
    for rep in reports:
        assert rep.rc in (0, 1), rep.err
        assert [s for s in ALL_SECRETS if s in rep.out + rep.err] == []
    assert findings(reports[1].json()) == findings(reports[-1].json())


def test_no_redact_says_what_it_does(planted: tuple[FakeKube, Path], tmp_path: Path) -> None:
    _, kc = planted
    out = tmp_path / "raw"
    got = run_cli(["collect", NAME, "-o", str(out), "--kubeconfig", str(kc), "--no-redact"])
    assert got.rc == 0 and "WARNING: --no-redact" in got.err
    text = "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert NAMED["DB_PWD"] in text and "redactions: 0" in text
    helptext = run_cli(
        ["collect", "--help"],
    ).out
    assert "--no-redact" in helptext and "exactly as the cluster has them" in helptext


def test_custom_pattern_from_the_cli(planted: tuple[FakeKube, Path], tmp_path: Path) -> None:
    _, kc = planted
    out = tmp_path / "custom"
    got = run_cli(["collect", NAME, "-o", str(out), "--kubeconfig", str(kc), "--redact-pattern", r"rank \d+"])
    assert got.rc == 0, got.err
    logs = "".join(p.read_text() for p in (out / "logs").rglob("*.log"))
    assert "rank 0" not in logs and "<redacted:custom> starting" in logs
    bad = run_cli(["collect", NAME, "-o", str(tmp_path / "x"), "--kubeconfig", str(kc), "--redact-pattern", "("])
    assert bad.rc == 2 and "not a valid RE2 pattern" in bad.err and bad.err.count("\n") == 1


def test_gap_reasons_pass_through_the_redactor() -> None:
    from ckpt_doctor.snapshot import Gap, Snapshot
    from ckpt_doctor.sources.redact import Redactor

    token = "hf_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"
    snap = Snapshot(not_collected=[Gap("events", f"server error 500: upstream said Authorization: Bearer {token}")])
    Redactor().snapshot(snap)
    assert token not in snap.not_collected[0].reason
    assert snap.not_collected[0].what == "events"

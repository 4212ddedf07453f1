"""A planted-secret corpus: more than 100 credentials in every place and encoding ckpt-doctor may meet them.

`build()` returns one incident (a `tests.scenario.Scenario`) with secrets planted in env (spec.trainer.env, the
runtime's and the pods' env), container args (flags), shell scripts (login and auth commands), the mounted
ConfigMap (config files, .netrc, .git-credentials, .env, a service-account JSON, SSH/PGP/PEM keys, a kubeconfig),
annotations, container logs, events and a condition message; `kubeconfig()` plants more in the kubeconfig the
tests use. Every secret is planted in one of the forms the redactor must know: by name, after a flag, in a login
command, as URL userinfo, in a header, in netrc, in a key block, in credential JSON, as a high-entropy token, and
base64- or URL-encoded.

Each `Plant` lists the forms that must never appear in anything ckpt-doctor writes (`forms()`: the secret, its
base64 and URL-encoded forms, and the encoded blob it was planted as). `NEAR_MISSES` are values that look a bit
like credentials and must survive (`TOKENIZER_PATH`, `MAX_TOKENS`, `KEYBOARD`, `MONKEY`, `CKPT_DIR`...).
"""

from __future__ import annotations

import base64
import hashlib
import json
import string
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from tests.scenario import HEALTHY_SCRIPT, Attempt, PodSpecKnobs, Scenario, convention_log

NAME, NS = "sft-secrets", "team-a"
CK = f"/mnt/ckpt/{NAME}"
_ALPHABET = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Plant:
    where: str  # env | args | script | python | configmap | annotation | log | event | condition | kubeconfig
    # by-name | flag | login | url | header | netrc | key-block | cred-json | shape | base64 | urlencoded, and the
    # classes of issue 22's probe: grammar | config | python-call | bytes | nested-json | next-line | wrapped
    kind: str
    secret: str
    blobs: tuple[str, ...] = ()  # encoded forms it was planted as (base64 of `user:secret`...), or the other half
    cls: str = ""  # the finer class (`sshpass-array`, `maven-settings`...): leaks are counted by it too

    def forms(self) -> set[str]:
        s = self.secret
        out = {s, *self.blobs}
        if len(s) >= 12:
            out |= {quote(s, safe=""), base64.b64encode(s.encode()).decode().rstrip("=")}
            out.add(base64.urlsafe_b64encode(s.encode()).decode().rstrip("="))
        return {f for f in out if f}


@dataclass
class Corpus:
    scenario: Scenario
    plants: list[Plant] = field(default_factory=list)
    # the checkpoint directory as `find -printf` lists it, `df`, and DeepSpeed's `latest` (paths can hold secrets)
    listing: str = ""
    df: str = ""
    latest: bytes = b""

    def secret(
        self, where: str, kind: str, value: str | None = None, blobs: tuple[str, ...] = (), cls: str = ""
    ) -> str:
        v = value if value is not None else token(len(self.plants))
        self.plants.append(Plant(where, kind, v, blobs, cls))
        return v


def token(i: int, n: int = 24) -> str:
    """A unique, high-entropy secret of `n` characters: letters of both cases and digits."""
    h = b"".join(hashlib.sha256(f"ckpt-doctor-planted-{i}-{j}".encode()).digest() for j in range(n // 32 + 1))
    return f"Pq{i:03d}x" + "".join(_ALPHABET[b % 62] for b in h[: n - 6])


def _b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def pem(label: str, body: str) -> str:
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n"


# values that look a little like credentials and are not: they must reach the bundle unredacted
NEAR_MISSES: dict[str, str] = {
    "TOKENIZER_PATH": "/models/tokenizer-v3",
    "MAX_TOKENS": "4096",
    "KEYBOARD": "us-intl",
    "MONKEY": "patch-level-42",
    "TOKENIZERS_PARALLELISM": "false",
    "PASSTHROUGH": "enabled-mode",
    "HF_TOKEN_PATH": "/var/run/secrets/hf/token",
    "SECRET_NAME": "hf-secret",
    "OUTPUT_DIR": CK,
    "AUTHOR": "research-team-7",
    "BYPASS_CACHE": "yes-bypass",
}
NEAR_MISS_TEXT = [  # lines that must survive in logs and scripts
    "step 42 loss 1.234",
    "the bearer of bad news",
    "user login failed for bob",
    "basic configuration loaded",
    "git clone git@github.com:org/repo.git",
    "--max_tokens 512 --tokenizer_name meta-llama/Llama-3.1-8B",
    f"[checkpoint] saved {CK}/checkpoint-100",
]


def build() -> Corpus:
    """The incident with every secret planted."""
    c = Corpus(Scenario(name=NAME, namespace=NS))
    s = c.scenario
    sec = c.secret

    # -- env: spec.trainer.env (quoted by overrides-not-applied: the runtime lacks the ancestor label) ----
    hf = "hf_" + token(900, 34)[6:] + "aB3dE5fG7hJ9kL"
    trainer_env = {
        "HF_TOKEN": sec("env", "shape", hf),
        "PGPASSWORD": sec("env", "by-name"),
        "MLFLOW_TRACKING_PASSWORD": sec("env", "by-name", "lantern-orchid-meadow-seventeen"),
        "DB_PWD": sec("env", "by-name"),
        "SMTP_PASS": sec("env", "by-name"),
        "WANDB_API_KEY": sec("env", "by-name", hashlib.sha1(b"wandb").hexdigest()),
        "AWS_SECRET_ACCESS_KEY": sec("env", "by-name", "wJalrXUtnFEMI/K7MDENG/" + token(901, 18)),
        "SOME_SERVICE_KEY": sec("env", "by-name"),
        "REDIS_PASSWD": sec("env", "by-name"),
        "GITHUB_TOKEN": sec("env", "by-name"),
        "OAUTH_CLIENT_SECRET": sec("env", "by-name"),
        "SESSION_COOKIE": sec("env", "by-name"),
        "AUTH": sec("env", "by-name"),
        "hfToken": sec("env", "by-name"),
        "KAGGLE_KEY": sec("env", "by-name"),
        "NGC_API_KEY": sec("env", "by-name"),
        "AWS_SESSION_TOKEN": sec("env", "by-name"),
        "ENCRYPTION_KEY": sec("env", "by-name"),
        "PRIVATE_TOKEN": sec("env", "by-name"),
        "COMET_API_KEY": sec("env", "by-name"),
    }
    s.trainer_env = [{"name": "CKPT_DIR", "value": CK}] + [{"name": k, "value": v} for k, v in trainer_env.items()]
    s.trainer_env += [{"name": k, "value": v} for k, v in list(NEAR_MISSES.items())[:6]]
    s.ancestor_label = False
    s.label_on_pod_template = True

    # -- env of the runtime and the pods -----------------------------------------------------------------
    sa_key_body = token(902, 48) + token(903, 48)
    sa = {
        "type": "service_account",
        "project_id": "ml-platform",
        "private_key_id": sec("env", "cred-json", hashlib.sha1(b"key-id").hexdigest()),
        "private_key": pem("PRIVATE KEY", sec("env", "key-block", sa_key_body)),
        "client_email": "trainer@ml-platform.iam.gserviceaccount.com",
        "client_id": sec("env", "cred-json", "10" + "".join(str((i * 7) % 10) for i in range(19))),
        "client_secret": sec("env", "cred-json"),
    }
    docker_pw = sec("env", "base64")
    docker_auth = _b64(f"robot$trainer:{docker_pw}")
    c.plants[-1] = Plant("env", "base64", docker_pw, (docker_auth,))
    pod_env = [
        {"name": "CKPT_DIR", "value": CK},
        {"name": "DATABASE_URL", "value": f"postgresql://trainer:{sec('env', 'url')}@db.internal:5432/runs"},
        {
            "name": "AZURE_STORAGE_CONNECTION_STRING",
            "value": f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={sec('env', 'shape')}==;"
            "EndpointSuffix=core.windows.net",
        },
        {"name": "GOOGLE_CREDENTIALS_JSON", "value": json.dumps(sa)},
        {"name": "MY_APP_SECRET", "value": sec("env", "by-name")},
        {"name": "LICENSE_KEY", "value": sec("env", "by-name")},
        {"name": "SESSION_ID", "value": sec("env", "by-name")},
        {"name": "DOCKER_AUTH_CONFIG", "value": json.dumps({"auths": {"registry.example.com": {"auth": docker_auth}}})},
        {"name": "HTTPS_PROXY", "value": f"http://proxyuser:{sec('env', 'url')}@proxy.internal:3128"},
        {"name": "HF_HUB_TOKEN_FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "hf-secret", "key": "token"}}},
        *({"name": k, "value": v} for k, v in NEAR_MISSES.items()),
    ]

    # -- args and the shell script ------------------------------------------------------------------------
    stdin_pw = sec("script", "login")
    script_lines = [
        "set -e",
        "nvidia-smi -L || true",
        f"huggingface-cli login --token {sec('script', 'login')} --add-to-git-credential",
        f"hf auth login --token {sec('script', 'login')}",
        f"wandb login {sec('script', 'login')}",
        f"docker login -u bot -p {sec('script', 'login')} ghcr.io",
        f"echo {stdin_pw} | docker login --username bot --password-stdin registry.example.com",
        f"vault login {sec('script', 'login')}",
        f"ngrok config add-authtoken {sec('script', 'login')}",
        f"aws configure set aws_secret_access_key {sec('script', 'login')}",
        f"curl -fsS -u bot:{sec('script', 'login')} https://artifacts.internal/x.tar -o /tmp/x.tar",
        f"curl -fsS -H 'Authorization: Bearer {sec('script', 'header')}' https://api.internal/v1/ping",
        f"mysql -ubot -p{sec('script', 'login')} -h db.internal runs < /opt/train/schema.sql",
        f"sshpass -p {sec('script', 'login')} scp bot@backup:/ckpt/x.tar /tmp/",
        f"redis-cli -a {sec('script', 'login')} ping",
        f"export DB_PASSWORD={sec('script', 'by-name')}",
        f"git clone https://oauth2:{sec('script', 'url')}@gitlab.example.com/team/repo.git /tmp/repo",
        f"git clone https://{sec('script', 'url', 'ghp_' + token(904, 40)[6:])}@github.com/org/private.git",
        NEAR_MISS_TEXT[4],
        "exec python /opt/train/train.py"
        f" --api-key {sec('args', 'flag')}"
        f" --hf_token={sec('args', 'flag')}"
        f" --some_key {sec('args', 'flag')}"
        f" --db-password={sec('args', 'flag')}"
        f" --wandb-key {sec('args', 'flag')}"
        f" --auth-token {sec('args', 'flag')}"
        f" --mlflow-uri https://mlflow:{sec('args', 'url')}@mlflow.internal/"
        f" --client_secret={sec('args', 'flag')}"
        f" --s3-secret {sec('args', 'flag')}"
        f" --token {sec('args', 'flag')}"
        f" --output_dir {CK} --save_steps 50 {NEAR_MISS_TEXT[5]}",
    ]

    # -- the mounted ConfigMap: the script and config files ------------------------------------------------
    py = HEALTHY_SCRIPT + "\n".join(
        [
            "from huggingface_hub import login, HfApi",
            f'login(token="{sec("python", "flag")}")',
            f'wandb.login(key="{sec("python", "flag", hashlib.sha1(b"wandb-py").hexdigest())}")',
            f'os.environ["OPENAI_API_KEY"] = "{sec("python", "by-name")}"',
            f'client = Minio("s3.internal:9000", access_key="AKIA{token(905, 22)[6:].upper()[:16]}",'
            f' secret_key="{sec("python", "flag")}")',
            f'requests.get(URL, headers={{"Authorization": "Bearer {sec("python", "header")}"}})',
            "",
        ]
    )
    akid = py.split('access_key="', 1)[1].split('"', 1)[0]
    c.plants.append(Plant("python", "shape", akid))
    ssh_body = token(906, 70)
    pgp_body = token(907, 70)
    tls_body = token(908, 64)
    kc_key = pem("RSA PRIVATE KEY", token(909, 64))
    kc_key_b64 = _b64(kc_key)
    c.plants += [
        Plant("configmap", "key-block", ssh_body),
        Plant("configmap", "key-block", pgp_body),
        Plant("configmap", "key-block", tls_body),
        Plant("configmap", "base64", token(909, 64), (kc_key_b64,)),
    ]
    dockercfg_pw = sec("configmap", "base64")
    dockercfg_blob = _b64(f"ci-bot:{dockercfg_pw}")
    c.plants[-1] = Plant("configmap", "base64", dockercfg_pw, (dockercfg_blob,))
    config = {
        "config.yaml": "\n".join(
            [
                f"output_dir: {CK}",
                "save_steps: 50",
                f"hub_token: {sec('configmap', 'by-name')}",
                f"wandb_api_key: {sec('configmap', 'by-name')}",
                f"report_password: '{sec('configmap', 'by-name')}'",
                "tokenizer_name: meta-llama/Llama-3.1-8B",
                "max_tokens: 512",
                "",
            ]
        ),
        ".netrc": f"machine api.wandb.ai login user password {sec('configmap', 'netrc')}\n"
        f"machine huggingface.co\n  login hf_user\n  password {sec('configmap', 'netrc')}\n",
        ".git-credentials": f"https://bot:{sec('configmap', 'url')}@github.com\n",
        "credentials.json": json.dumps(
            {
                "type": "service_account",
                "project_id": "ml-platform",
                "private_key_id": sec("configmap", "cred-json", hashlib.sha1(b"cm-key-id").hexdigest()),
                "private_key": pem("PRIVATE KEY", sec("configmap", "key-block", token(910, 96))),
                "client_id": sec("configmap", "cred-json", "1" + "".join(str((i * 3) % 10) for i in range(20))),
                "client_secret": sec("configmap", "cred-json"),
            },
            indent=2,
        ),
        "app.env": f"HF_TOKEN={sec('configmap', 'by-name')}\nDB_PASSWORD=\"{sec('configmap', 'by-name')}\"\n",
        "id_ed25519": pem("OPENSSH PRIVATE KEY", ssh_body),
        "signing.asc": pem("PGP PRIVATE KEY BLOCK", pgp_body),
        "tls.key": pem("EC PRIVATE KEY", tls_body),
        "config.toml": f'[db]\nuser = "trainer"\npassword = "{sec("configmap", "by-name")}"\n',
        "aws_credentials": "[default]\naws_access_key_id = AKIAIOSFODNN7PLANTED\n"
        f"aws_secret_access_key = {sec('configmap', 'by-name')}\n",
        "settings.ini": f"[app]\nsecret_key = {sec('configmap', 'by-name')}\ndebug = false\n",
        "kubeconfig": "apiVersion: v1\nkind: Config\nusers:\n- name: ci\n  user:\n"
        f"    token: {sec('configmap', 'by-name')}\n    client-key-data: {kc_key_b64}\n",
        "dockerconfig.json": json.dumps({"auths": {"ghcr.io": {"auth": dockercfg_blob}}}),
    }
    c.plants.append(Plant("configmap", "shape", "AKIAIOSFODNN7PLANTED"))
    probe = probe_plants(c)
    config.update(probe.config)
    script_lines[-1:-1] = probe.script
    pod_env += probe.env
    s.knobs = PodSpecKnobs(
        command=["bash", "-ec"],
        args=["\n".join(script_lines)],
        env=pod_env,
        script=py,
        config=config,
    )

    # -- annotations ------------------------------------------------------------------------------------
    tj_annotations = {
        "example.com/api-token": sec("annotation", "by-name"),
        "example.com/db-password": sec("annotation", "by-name"),
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(
            {"spec": {"trainer": {"env": [{"name": "HF_TOKEN", "value": sec("annotation", "by-name")}]}}}
        ),
        "example.com/notes": f"images pulled with https://bot:{sec('annotation', 'url')}@registry.example.com",
    }
    pod_annotations = {
        "vault.hashicorp.com/agent-token": sec("annotation", "by-name"),
        "example.com/auth-cookie": sec("annotation", "by-name"),
    }

    # -- logs: planted lines in the head, and in the crash line the evidence quotes -------------------------
    basic_pw = sec("log", "base64")
    basic_blob = _b64(f"alice:{basic_pw}")
    c.plants[-1] = Plant("log", "base64", basic_pw, (basic_blob,))
    proxy_pw = sec("log", "base64")
    proxy_blob = _b64(f"proxy:{proxy_pw}")
    c.plants[-1] = Plant("log", "base64", proxy_pw, (proxy_blob,))
    bare_pw = sec("log", "base64")
    bare_blob = _b64(f"svc-account:{bare_pw}")
    c.plants[-1] = Plant("log", "base64", bare_pw, (bare_blob,))
    env_blob_secret = sec("log", "base64")
    env_blob = _b64(f"HF_TOKEN={env_blob_secret}\nWANDB_MODE=online\n")
    c.plants[-1] = Plant("log", "base64", env_blob_secret, (env_blob,))
    pct_pw = sec("log", "urlencoded", "Pl@nted/" + token(911, 16) + "#1")
    pct_url_pw = sec("log", "urlencoded")
    pct_url = quote(f"https://bob:{pct_url_pw}@artifacts.internal/x", safe="")
    c.plants[-1] = Plant("log", "urlencoded", pct_url_pw, (pct_url,))
    jwt = "eyJhbGciOiJIUzI1NiJ9." + _b64(json.dumps({"sub": token(912)})).rstrip("=") + "." + token(913, 30)
    log_key = token(914, 64)
    tail_key = token(915, 64)
    planted_lines = [
        f"Authorization: Bearer {sec('log', 'header')}",
        f"authorization: Basic {basic_blob}",
        f"Cookie: session={sec('log', 'header')}; theme=dark",
        f"Set-Cookie: sid={sec('log', 'header')}; Path=/; HttpOnly",
        f"X-Api-Key: {sec('log', 'header')}",
        f"X-Vault-Token: {sec('log', 'header')}",
        f"Private-Token: {sec('log', 'header')}",
        f"Proxy-Authorization: Basic {proxy_blob}",
        f"connecting to https://:{sec('log', 'url')}@redis.internal:6379/0",
        f"db: postgres://trainer:{sec('log', 'url')}@db.internal/runs",
        f"GET https://api.internal/v1/runs?token={sec('log', 'by-name')}&page=2",
        f"PUT https://bucket.s3.amazonaws.com/x?X-Amz-Security-Token={sec('log', 'shape')}&X-Amz-Expires=60",
        f"GET https://acct.blob.core.windows.net/c/x?sv=2022&sr=b&sig={sec('log', 'shape')}%3D",
        f"hub token {sec('log', 'shape', 'hf_' + token(916, 36)[6:])} accepted",
        f"aws key {sec('log', 'shape', 'AKIA' + token(917, 22)[6:].upper()[:16])}",
        f"service account token {sec('log', 'shape', jwt)}",
        f"openai key {sec('log', 'shape', 'sk-proj-' + token(918, 30)[6:])}",
        f"login with password={sec('log', 'by-name')}",
        json.dumps({"level": "info", "msg": "configured", "api_key": sec("log", "by-name")}),
        json.dumps({"client_id": sec("log", "cred-json"), "client_secret": sec("log", "cred-json")}),
        f"creds {bare_blob}",
        f"env blob {env_blob}",
        f"retrying with password={quote(pct_pw, safe='')}",
        f"redirect={pct_url}",
        f"netrc: machine registry.internal login bot password {sec('log', 'netrc')}",
        f"connecting with {trainer_env['MLFLOW_TRACKING_PASSWORD']}",  # an env secret echoed: known value
        pem("PRIVATE KEY", sec("log", "key-block", log_key)).rstrip("\n"),
        # a key block whose BEGIN line fell before the window
        "\n".join([tail_key[:32], sec("log", "key-block", tail_key)[32:], "-----END PRIVATE KEY-----"]),
        *NEAR_MISS_TEXT[:4],
        *probe.log,
    ]
    # the secret of the tail block is what follows its first 32 characters
    c.plants[-1] = Plant("log", "key-block", tail_key[32:])
    crash = (
        f"RuntimeError: upload to https://uploader:{sec('log', 'url')}@artifacts.internal failed "
        f"(Authorization: Bearer {sec('log', 'header')}; password={sec('log', 'by-name')})"
    )
    first = convention_log(CK, 0, 120, save_every=50, crash=crash)
    head, _, rest = first.partition("\n")
    first = head + "\n" + "\n".join(planted_lines) + "\n" + rest
    # lines the evidence quotes: a save and a fresh start, each with a credential after what the readers need
    saved = f"[checkpoint] saved {CK}/checkpoint-100"
    first = first.replace(saved, f"{saved} (mirrored to https://mirror:{sec('log', 'url')}@backup.internal)", 1)
    second = convention_log(CK, 0, 60, resumed=False)
    fresh = "[checkpoint] no prior checkpoint, starting fresh"
    second = second.replace(fresh, f"{fresh} (Authorization: Bearer {sec('log', 'header')})", 1)
    s.js_restarts = 1
    s.attempts = [
        Attempt(0, "gpu-node-a", first, phase="Failed", exit_code=1, reason="Error", started=0),
        Attempt(1, "gpu-node-b", second, started=40),
    ]

    # -- events and a condition ---------------------------------------------------------------------------
    s.event("JobSet", NAME, "RestartJobSetFailurePolicyAction", f"applying RestartJobSet ({NAME}-node-0 failed)", 39)
    pods = s.pod_names()
    s.event(
        "Pod",
        pods[0][0],
        "Failed",
        f'Failed to pull image "registry.example.com/x:1": https://bot:{sec("event", "url")}@registry.example.com '
        "unauthorized",
        2,
    )
    s.event("Pod", pods[1][0], "FailedMount", f"mount failed: password={sec('event', 'by-name')} rejected", 41)
    s.event("TrainJob", NAME, "Warning", f"webhook call with Authorization: Bearer {sec('event', 'header')} failed", 42)
    s.event("TrainJob", NAME, "Note", f"X-Auth-Token: {sec('event', 'header')}", 43)
    for i, (reason, message) in enumerate(probe.events):
        s.event("Pod", pods[0][0], reason, message, 3 + i)
    s.tj_conditions = [
        {
            "type": "Failed",
            "status": "True",
            "reason": "TrainerFailed",
            "message": f"trainer exited; last error: password={sec('condition', 'by-name')}",
            "lastTransitionTime": "2026-11-30T09:30:00Z",
        }
    ]

    tj_annotations.update(probe.annotations)

    def post(objs: list[dict]) -> None:  # type: ignore[type-arg]
        for o in objs:
            meta = o.setdefault("metadata", {})
            if o["kind"] == "TrainJob":
                meta.setdefault("annotations", {}).update(tj_annotations)
            elif o["kind"] == "Pod":
                meta.setdefault("annotations", {}).update(pod_annotations)
                o.setdefault("spec", {})["initContainers"] = json.loads(json.dumps(probe.init_containers))

    s.post = post
    _listing(c)
    return c


def _listing(c: Corpus) -> None:
    """Secrets in what a checkpoint listing shows: a file named by a token's shape, a directory whose name carries a
    password by name, and a pointer file holding an access key."""
    hf = c.secret("listing", "shape", "hf_" + token(len(c.plants), 36))
    pw = c.secret("listing", "by-name", token(len(c.plants)))
    akid = c.secret("listing", "shape", "AKIA" + token(len(c.plants), 16).upper().replace("X", "Q")[:16])
    t = 1796025600.0
    rows = [("d", 4096, t, CK), ("d", 4096, t + 10, f"{CK}/checkpoint-100"),
            ("f", 1000, t + 11, f"{CK}/checkpoint-100/model.safetensors"),
            ("f", 900, t + 12, f"{CK}/checkpoint-100/trainer_state.json"), ("d", 4096, t + 20, f"{CK}/uploads"),
            ("f", 10, t + 21, f"{CK}/uploads/{hf}.json"), ("d", 4096, t + 30, f"{CK}/sync-password={pw}"),
            ("f", 14, t + 31, f"{CK}/latest")]  # fmt: skip
    c.listing = "".join(f"{k} {n} {m:.3f} {p}\n" for k, n, m, p in rows)
    c.df = "Filesystem 1-blocks Used Available Capacity Mounted on\n/dev/rbd0 1000000 1000 999000 1% /mnt/ckpt\n"
    c.latest = f"global_step100 {akid}\n".encode()


def kubeconfig(path: Path, server: str, c: Corpus) -> Path:
    """A kubeconfig for the fake API server whose user token is planted, with a second user holding a password
    and a private key, and a `broken` context whose server URL carries a password (for the error-line test)."""
    tok = c.secret("kubeconfig", "by-name")
    pw = c.secret("kubeconfig", "by-name")
    key_body = token(960, 64)
    c.plants.append(Plant("kubeconfig", "key-block", key_body))
    url_pw = c.secret("kubeconfig", "url")
    key_b64 = _b64(pem("RSA PRIVATE KEY", key_body))
    host = server.split("://", 1)[1]
    path.write_text(
        f"""apiVersion: v1
kind: Config
current-context: fake
preferences: {{}}
clusters:
- name: fake
  cluster:
    server: {server}
- name: broken
  cluster:
    server: http://:{url_pw}@127.0.0.1:9/
- name: other
  cluster:
    server: http://{host}
users:
- name: fake
  user:
    token: {tok}
- name: other
  user:
    username: admin
    password: {pw}
    client-key-data: {key_b64}
contexts:
- name: fake
  context:
    cluster: fake
    user: fake
    namespace: {NS}
- name: broken
  context:
    cluster: broken
    user: fake
    namespace: {NS}
"""
    )
    return path


def explain_text(c: Corpus) -> str:
    """An apply-time error, as kubectl prints it, around planted credentials."""
    return (
        f'Error from server (Forbidden): error when creating "trainjob.yaml": admission webhook '
        f'"validator.trainjob.trainer.kubeflow.org" denied the request: spec.trainer: Invalid value: '
        f'"object": env HF_TOKEN={c.secret("explain", "by-name")} cannot be set through podTemplateOverrides; '
        f"request sent with Authorization: Bearer {c.secret('explain', 'header')} to "
        f"https://deployer:{c.secret('explain', 'url')}@api.internal:6443"
    )


def leaks(blob: bytes | str, plants: list[Plant]) -> list[Plant]:
    """The plants any of whose forms occur in `blob`."""
    data = blob if isinstance(blob, bytes) else blob.encode("utf-8", "surrogateescape")
    return [p for p in plants if any(f.encode() in data for f in p.forms())]


def lint_manifest(c: Corpus) -> str:
    """A TrainJob as a user writes it, with credentials where lint quotes lines: env set through
    podTemplateOverrides (env-in-pod-template-overrides cites each line) and flags in the trainer's args."""
    return f"""apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: sft-overrides
  namespace: {NS}
  annotations:
    example.com/deploy-token: {c.secret("lint", "by-name")}
spec:
  runtimeRef:
    apiGroup: trainer.kubeflow.org
    kind: TrainingRuntime
    name: checkpoint-runtime
  trainer:
    numNodes: 1
    args: ["--output_dir", "{CK}", "--hub_token", "{c.secret("lint", "flag")}"]
    env:
      - name: CKPT_DIR
        value: {CK}
      - name: WANDB_API_KEY
        value: {c.secret("lint", "by-name")}
  podTemplateOverrides:
    - targetJobs:
        - name: node
      spec:
        containers:
          - name: node
            env:
              - name: HF_TOKEN
                value: {c.secret("lint", "by-name")}
              - name: DB_PASSWORD
                value: "{c.secret("lint", "by-name", "lantern-orchid-lint-password")}"
              - name: DATABASE_URL
                value: postgresql://trainer:{c.secret("lint", "url")}@db.internal/runs
"""


# -- issue 22's probe: credentials given by grammar, config formats, Python calls, bytes, nested JSON, next-line
# values and wrapped tokens ----------------------------------------------------------------------------------


@dataclass
class Probe:
    """What `probe_plants` adds to the incident, by place (build() puts each where it belongs)."""

    script: list[str] = field(default_factory=list)  # lines of the trainer's shell script
    config: dict[str, str] = field(default_factory=dict)  # files of the mounted ConfigMap
    log: list[str] = field(default_factory=list)  # lines of the first attempt's log
    env: list[dict[str, str]] = field(default_factory=list)  # the pods' env
    annotations: dict[str, str] = field(default_factory=dict)  # the TrainJob's
    init_containers: list[dict[str, object]] = field(default_factory=list)  # the pods'
    events: list[tuple[str, str]] = field(default_factory=list)  # (reason, message) about the first pod


def _akid(i: int) -> str:
    return "AKIA" + "".join(ch for ch in token(i, 40)[6:].upper() if ch.isalnum())[:16]


def _hex(i: int, n: int = 64) -> str:
    return hashlib.sha256(f"ckpt-doctor-hex-{i}".encode()).hexdigest()[:n]


# values near the new classes that are not credentials: they must reach the bundle unredacted
S3_KEY = "run/checkpoint-100/optimizer.pt"
PROBE_NEAR_MISSES = [
    f"'Key': '{S3_KEY}'",  # an S3 key, after an ambiguous name (botocore's params)
    "Key=run/checkpoint-200/model.safetensors",
    "global_step 1500",
    "step: 1500",
    "rule fresh-start-after-restart",
    "kubectl get secret hf-secret -n team-a -o name",
    "kubectl -n team-a logs sft-secrets-node-0-0 -c node --previous",
    "mysql --defaults-extra-file=/etc/mysql/trainer.cnf -h db.internal runs",
    "7z x /data/shards.7z -o/data/shards",
    "unzip -o /data/corpus.zip -d /data/corpus",
    "sudo -u trainer python /opt/train/train.py",
    "<privateKey>${user.home}/.ssh/id_ed25519</privateKey>",
    "<name>fs.s3a.endpoint</name>",
    "token:\n  secretKeyRef:",
    "DEBUG:botocore.auth:CanonicalRequest:",
    f'Key="{S3_KEY}"',  # the same in a Python call
]


def probe_plants(c: Corpus) -> Probe:
    """The placements of the classes the probe found leaking, each at least once where `collect` reads it."""
    sec = c.secret
    out = Probe()

    # -- credentials given by a command's grammar: array items, shell lines, an event, a trace in a log ------
    g = "grammar"
    out.init_containers = [
        {
            "name": "fetch-ckpt",
            "image": "alpine:3.20",
            "command": ["sshpass", "-p", sec("args", g, cls="sshpass-array"), "scp", "bot@backup:/ckpt/x.tar", "/tmp/"],
        },
        {"name": "sshpass-split", "image": "alpine:3.20", "command": ["sshpass"],
         "args": ["-p", sec("args", g, cls="sshpass-array"), "rsync", "-a", "backup:/ckpt/", "/mnt/ckpt/"]},
        {"name": "shards", "image": "alpine:3.20",
         "command": ["7z", "x", f"-p{sec('args', g, cls='7z')}", "/data/shards.7z", "-o/data/shards"]},
        {"name": "corpus", "image": "alpine:3.20",
         "command": ["unzip", "-P", sec("args", g, cls="unzip"), "/data/corpus.zip", "-d", "/data/corpus"]},
        {"name": "smb", "image": "alpine:3.20",
         "command": ["smbclient", "//fs.internal/ckpt", "-U", f"trainer%{sec('args', g, cls='smbclient')}",
                     "-c", "get x.tar"]},
        {"name": "mirror", "image": "alpine:3.20",
         "command": ["lftp", "-u", f"mirror,{sec('args', g, cls='lftp')}", "sftp://backup.internal",
                     "-e", "mirror /ckpt /backup; bye"]},
        {"name": "minio-alias", "image": "minio/mc", "command": ["mc"],
         "args": ["alias", "set", "s3", "https://s3.internal", sec("args", g, _akid(970), cls="mc-alias"),
                  sec("args", g, cls="mc-alias")]},
        {"name": "rclone-config", "image": "rclone/rclone",
         "command": ["rclone", "config", "create", "s3remote", "s3", "provider", "Minio", "access_key_id",
                     sec("args", g, _akid(971), cls="rclone"), "secret_access_key", sec("args", g, cls="rclone")]},
        {"name": "sudo-stdin", "image": "alpine:3.20",
         "command": ["sh", "-c", f"echo {sec('args', g, cls='sudo-stdin')} | sudo -S mount -a"]},
        {"name": "near-misses", "image": "alpine:3.20",
         "command": ["sh", "-c", "; ".join(PROBE_NEAR_MISSES[7:11])]},
    ]
    out.events = [
        (
            "FailedPostStartHook",
            f'PostStartHook failed: exec of "mysql -h db.internal -u trainer -p{sec("event", g, cls="mysql-event")} '
            'runs -e \'select 1\'" exited with 1',
        ),
        (
            "BackOff",
            f"Back-off restarting failed container db-init: mysql -uroot -p{sec('event', g, cls='mysql-event')}",
        ),
    ]
    out.script = [
        f"7z x -p{sec('script', g, cls='7z')} /data/shards.7z -o/data/shards",
        f"unzip -q -P {sec('script', g, cls='unzip')} /data/corpus.zip -d /data/corpus",
        f"smbclient //fs.internal/ckpt -U trainer%{sec('script', g, cls='smbclient')} -c 'put x.tar'",
        f"lftp -u mirror,{sec('script', g, cls='lftp')} -e 'mirror -R /mnt/ckpt /backup; bye' sftp://backup.internal",
        f"echo {sec('script', g, cls='sudo-stdin')} | sudo -S chown -R 1000 /mnt/ckpt",
        f"printf '%s\\n' '{sec('script', g, cls='sudo-stdin')}' | sudo -S -k mount -a",
        f"mc alias set s3 https://s3.internal {sec('script', g, _akid(972), cls='mc-alias')} "
        f"{sec('script', g, cls='mc-alias')}",
        f"rclone config create s3remote s3 access_key_id {sec('script', g, _akid(973), cls='rclone')} "
        f"secret_access_key {sec('script', g, cls='rclone')}",
        f"openssl enc -d -aes-256-cbc -pass pass:{sec('script', g, cls='openssl')} -in /data/key.enc -out /tmp/k",
        f"keytool -importkeystore -srckeystore a.p12 -srcstorepass {sec('script', g, cls='keytool')} "
        f"-destkeystore b.jks -deststorepass {sec('script', g, cls='keytool')}",
        f"htpasswd -b -c /etc/nginx/.htpasswd admin {sec('script', g, cls='htpasswd')}",
        f"ldapsearch -x -D cn=admin,dc=example,dc=org -w {sec('script', g, cls='ldapsearch')} -b dc=example,dc=org",
        f"sqlcmd -S db.internal -U sa -P {sec('script', g, cls='sqlcmd')} -Q 'select 1'",
        f"zip -P {sec('script', g, cls='zip')} /tmp/ckpt.zip /mnt/ckpt/latest",
        f"curl --proxy-user proxy:{sec('script', g, cls='curl-proxy')} -x http://proxy:3128 https://x.internal",
        f"poetry config http-basic.internal ci {sec('script', g, cls='poetry')}",
        *PROBE_NEAR_MISSES[5:11],
    ]
    trace_pw = sec("log", g, cls="sshpass-trace")
    out.log += [
        f"+ sshpass -p {trace_pw} rsync -a /mnt/ckpt/ backup:/ckpt/",
        f"+ 7z x -p{sec('log', g, cls='7z')} /data/shards.7z -o/data/shards",
    ]

    # -- config formats: Maven, Hadoop, netrc, .pgpass, pip.conf, .pypirc, docker config, .npmrc, git ----------
    f = "config"
    out.config = {
        "settings.xml": "\n".join(
            [
                "<settings>",
                "  <servers>",
                "    <server>",
                "      <id>nexus-releases</id>",
                "      <username>deploy</username>",
                f"      <password>{sec('configmap', f, cls='maven-settings')}</password>",
                "    </server>",
                "    <server>",
                "      <id>signing</id>",
                f"      {PROBE_NEAR_MISSES[11]}",
                f"      <passphrase>{sec('configmap', f, cls='maven-settings')}</passphrase>",
                "    </server>",
                "  </servers>",
                "</settings>",
                "",
            ]
        ),
        "core-site.xml": "\n".join(
            [
                "<configuration>",
                "  <property>",
                f"    {PROBE_NEAR_MISSES[12]}",
                "    <value>https://s3.internal</value>",
                "  </property>",
                "  <property>",
                "    <name>fs.s3a.secret.key</name>",
                f"    <value>{sec('configmap', f, cls='hadoop-site')}</value>",
                "  </property>",
                "</configuration>",
                "",
            ]
        ),
        "netrc": f"machine nexus.internal login deploy account ops password {sec('configmap', f, cls='netrc')}\n"
        f"machine files.internal password {sec('configmap', f, cls='netrc')} login mirror\n"
        f"default\n    login anonymous\n    password {sec('configmap', f, cls='netrc')}\n",
        ".pgpass": f"db.internal:5432:runs:trainer:{sec('configmap', f, cls='pgpass')}\n"
        f"*:*:*:replicator:{sec('configmap', f, cls='pgpass')}\n",
        "pip.conf": "[global]\n"
        f"index-url = https://ci-bot:{sec('configmap', f, cls='pip-conf')}@pypi.internal/simple\n"
        f"extra-index-url = https://{sec('configmap', f, cls='pip-conf')}@gitlab.example.com/api/v4/projects/42/"
        "packages/pypi/simple\ntrusted-host = pypi.internal\n",
        ".pypirc": "[distutils]\nindex-servers = internal\n\n[internal]\nrepository = https://pypi.internal/\n"
        f"username = ci-bot\npassword = {sec('configmap', f, cls='pypirc')}\n",
        "docker-config.json": json.dumps(
            {
                "auths": {
                    "quay.io": {"auth": _b64(f"robot+ci:{(dq := sec('configmap', f, cls='docker-config'))}")},
                    "registry.internal": {"identitytoken": sec("configmap", f, cls="docker-config")},
                },
                "credHelpers": {"gcr.io": "gcloud"},
            },
            indent=2,
        ),
        ".npmrc": f"//registry.npmjs.org/:_authToken={sec('configmap', f, cls='npmrc')}\nalways-auth=true\n",
        ".gitconfig": '[http "https://git.internal/"]\n'
        f"\textraheader = AUTHORIZATION: bearer {sec('configmap', f, cls='gitconfig')}\n",
    }
    at = next(i for i, pl in enumerate(c.plants) if pl.secret == dq)
    c.plants[at] = Plant("configmap", f, dq, (_b64(f"robot+ci:{dq}"),), "docker-config")

    # -- Python: call keywords, auth tuples, positional passwords (ast where the text is Python) -------------
    p = "python-call"
    out.config["upload.py"] = "\n".join(
        [
            "import boto3, ftplib, keyring, paramiko, psycopg2, pymysql, requests, smtplib",
            "from requests.auth import HTTPBasicAuth",
            "",
            f'requests.post(URL, json=payload, auth=("svc", "{sec("python", p, cls="auth-tuple")}"))',
            f'requests.get(URL, auth=HTTPBasicAuth("svc", "{sec("python", p, cls="auth-call")}"))',
            f'conn = psycopg2.connect(host="db.internal", user="trainer", password="{sec("python", p, cls="kw")}")',
            "smtp = smtplib.SMTP_SSL('smtp.internal')",
            f'smtp.login("alerts@example.com", "{sec("python", p, cls="login-positional")}")',
            f'ftp = ftplib.FTP("ftp.internal", "mirror", "{sec("python", p, cls="positional")}")',
            "ssh = paramiko.SSHClient()",
            "ssh.connect(",
            '    "backup.internal",',
            '    username="bot",',
            f'    password="{sec("python", p, cls="kw-multiline")}",',
            ")",
            "s3 = boto3.client(",
            '    "s3",',
            f'    aws_access_key_id="{sec("python", p, _akid(974), cls="kw-multiline")}",',
            "    aws_secret_access_key=(",
            f'        "{sec("python", p, cls="kw-multiline")}"',
            "    ),",
            ")",
            f'keyring.set_password("ckpt-upload", "bot", "{sec("python", p, cls="positional")}")',
            f'db = pymysql.connect("db.internal", "trainer", "{sec("python", p, cls="positional")}", "runs")',
            f's3.upload_file("/mnt/ckpt/x", Bucket="ckpt", {PROBE_NEAR_MISSES[15]})',
            "",
        ]
    )
    out.script.append(
        f"python -c 'import requests; requests.get(\"https://x.internal\", auth=(\"svc\", "
        f"\"{sec('script', p, cls='auth-tuple')}\"))'"
    )
    out.log += [
        'Traceback (most recent call last):',
        '  File "/opt/train/upload.py", line 4, in <module>',
        f'    requests.post(URL, json=payload, auth=("svc", "{sec("log", p, cls="auth-tuple")}"))',
        "requests.exceptions.ConnectionError: connection refused",
    ]

    # -- bytes literals: botocore's debug log of a request's headers ----------------------------------------
    b = "bytes"
    sts = "IQoJb3JpZ2luX2VjE" + token(len(c.plants), 90)
    sig = _hex(975)
    out.log += [
        "DEBUG:botocore.endpoint:Sending http request: <AWSPreparedRequest stream_output=False, method=PUT, "
        f"url=https://ckpt.s3.amazonaws.com/{S3_KEY}, headers={{'User-Agent': b'Boto3/1.35.0', "
        f"'X-Amz-Date': b'20261130T093000Z', 'X-Amz-Security-Token': b'{sec('log', b, sts, cls='botocore-headers')}', "
        f"'Authorization': b'AWS4-HMAC-SHA256 Credential=ASIAPLANTEDKEY000001/20261130/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-date;x-amz-security-token, "
        f"Signature={sec('log', b, sig, cls='botocore-headers')}'}}>",
        f"DEBUG:botocore.hooks: params={{'Bucket': 'ckpt', {PROBE_NEAR_MISSES[0]}}}",
        f"connect kwargs: {{'user': 'trainer', 'password': b'{sec('log', b, cls='bytes-dict')}', 'db': 'runs'}}",
        f'session = Session(token=b"{sec("log", b, cls="bytes-kw")}")',
    ]

    # -- JSON inside a JSON string -----------------------------------------------------------------------------
    n = "nested-json"
    out.log += [
        json.dumps({"level": "debug", "msg": "request", "body": json.dumps({"user": "u", "password": sec("log", n)})}),
        json.dumps({"event": json.dumps({"payload": json.dumps({"api_key": sec("log", n, cls="doubly")})})}),
    ]
    out.env = [{"name": "APP_CONFIG", "value": json.dumps({"db": json.dumps({"password": sec("env", n)})})}]
    out.annotations = {"example.com/config": json.dumps({"extra": json.dumps({"token": sec("annotation", n)})})}
    out.events.append(
        ("WebhookFailed", "response: " + json.dumps({"error": json.dumps({"client_secret": sec("event", n)})}))
    )

    # -- values on the line after their key ------------------------------------------------------------------
    x = "next-line"
    out.log += [
        "DEBUG:botocore.auth:CanonicalRequest:",
        "PUT",
        f"/{S3_KEY}",
        "DEBUG:botocore.auth:StringToSign:",
        "AWS4-HMAC-SHA256",
        "20261130T093000Z",
        "20261130/us-east-1/s3/aws4_request",
        _hex(976),
        "DEBUG:botocore.auth:Signature:",
        sec("log", x, _hex(977), cls="botocore-signature"),
        "api_token:",
        f"  {sec('log', x, cls='yaml')}",
    ]
    out.config["secrets.yaml"] = "\n".join(
        [
            "database:",
            "  host: db.internal",
            "  password:",
            f"    {sec('configmap', x, cls='yaml')}",
            "hub:",
            "  token: |",
            f"    {sec('configmap', x, cls='yaml-block')}",
            "  refresh_token: >-",
            f"    {sec('configmap', x, cls='yaml-block')}",
            "storage:",
            f"  {PROBE_NEAR_MISSES[13].replace(chr(10), chr(10) + '  ')}",
            "      name: hf-secret",
            "      key: token",
            "",
        ]
    )

    # -- a token wrapped over two lines (a terminal's or a log collector's width) -------------------------------
    w = "wrapped"
    for i, head in enumerate(
        [
            "2026-11-30 09:30:01 INFO uploader: sending with Authorization: Bearer ",
            "2026-11-30 09:30:02 INFO export HF_TOKEN=",
            "2026-11-30 09:30:03 WARNING using api_key=",
        ]
    ):
        tok = ("hf_" if i == 1 else "") + token(len(c.plants) + 500, 70)
        first, tail = tok[:40], tok[40:]  # the line was cut at its collector's width
        c.plants.append(Plant("log", w, tail, (first,), "wrapped-line"))
        out.log += [head + first, tail]

    # -- near misses in the log -------------------------------------------------------------------------------
    out.log += [*PROBE_NEAR_MISSES[1:7], "DEBUG:botocore.auth:Signature:", "step 42 loss 1.234"]
    return out

"""The one redactor for everything that leaves the cluster: objects, events, logs, bundle metadata.

Three nets, applied in this order to every string:

1. **by name**: an env var (`{name, value}`), a map key or a command-line flag whose name looks like a
   credential (`HF_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `db_password`, `--api-key`) has its value replaced,
   whatever the value looks like;
2. **by shape**: tokens with a recognisable format (HF `hf_…`, AWS `AKIA…`, GCP keys and service-account
   private keys, Azure connection strings and SAS signatures, GitHub/GitLab/Slack/OpenAI/npm/PyPI tokens,
   JWTs, bearer and basic credentials, `scheme://user:password@` URLs, kubeconfig key material) are
   replaced wherever they occur (env values, args, ConfigMaps, annotations, event messages, log lines);
3. **by assignment**: `password=…`, `api_key: …`, `--hf_token …` inside free text.

Each replacement is `<redacted:KIND>` and is counted. Extra patterns (`--redact-pattern`) are regexes:
the first group is replaced when the pattern has one, else the whole match.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ckpt_doctor.errors import InputError
from ckpt_doctor.snapshot import Gap, LogRef, Snapshot

MARK = "<redacted"


def marker(kind: str) -> str:
    return f"<redacted:{kind}>"


# -- names that hold credentials ------------------------------------------------------------------------

_SENSITIVE_LAST = frozenset(
    {
        "token",
        "pass",
        "password",
        "passwd",
        "passphrase",
        "secret",
        "apikey",
        "credential",
        "credentials",
        "sas",
        "pat",
    }
)
_SENSITIVE_PAIRS = frozenset(
    {
        ("api", "key"),
        ("access", "key"),
        ("secret", "key"),
        ("private", "key"),
        ("account", "key"),
        ("storage", "key"),
        ("master", "key"),
        ("encryption", "key"),
        ("signing", "key"),
        ("license", "key"),
        ("connection", "string"),
        ("client", "secret"),
        ("auth", "key"),
        ("sas", "url"),
    }
)
_BENIGN_NAMES = frozenset(
    {
        "pad_token",
        "eos_token",
        "bos_token",
        "unk_token",
        "sep_token",
        "cls_token",
        "mask_token",
        "max_token",
    }
)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def _words(name: str) -> list[str]:
    """`AWS_SECRET_ACCESS_KEY`, `hf-token`, `apiKey`, `client.secret` → lower-case words."""
    out: list[str] = []
    for part in re.split(r"[_\-.\s/]+", name):
        out.extend(w.lower() for w in _WORD.findall(part))
    return out


def sensitive_name(name: str) -> bool:
    """True when a variable, key or flag named `name` holds a credential."""
    bare = name.strip().lstrip("-").strip("\"'")
    if not bare or bare.lower() in _BENIGN_NAMES:
        return False
    words = _words(bare)
    if not words:
        return False
    last = words[-1]
    if last in _SENSITIVE_LAST:
        return True
    if last == "pwd" and len(words) > 1:  # DB_PWD, not the shell's PWD
        return True
    if len(words) >= 2 and (words[-2], last) in _SENSITIVE_PAIRS:
        return True
    return last in ("auth", "authorization") and len(words) <= 2


# -- shapes ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pattern:
    kind: str
    rx: re.Pattern[str]
    needles: tuple[str, ...]  # lower-case literals one of which must occur for the pattern to apply
    group: int = 0  # 0: replace the whole match; n: replace group n only


def _p(kind: str, rx: str, needles: Iterable[str], group: int = 0, flags: int = 0) -> Pattern:
    return Pattern(kind, re.compile(rx, flags), tuple(needles), group)


_ASSIGN_WORDS = (
    r"password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|"
    r"private[_-]?key|account[_-]?key|auth[_-]?key|client[_-]?secret|credentials?|connection[_-]?string|"
    r"private[_-]?key[_-]?id|sas[_-]?token"
)

SHAPES: tuple[Pattern, ...] = (
    _p(
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)",
        ["private key-----"],
        flags=re.S,
    ),
    _p("hf-token", r"\bhf_[A-Za-z0-9]{30,}", ["hf_"]),
    _p(
        "aws-access-key-id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{16}\b",
        ["akia", "asia", "abia", "acca", "agpa", "aida", "aipa", "anpa", "anva", "aroa", "apka"],
    ),
    _p("gcp-api-key", r"\bAIza[0-9A-Za-z_\-]{35,}", ["aiza"]),
    _p("gcp-oauth-token", r"\bya29\.[0-9A-Za-z_\-]{20,}", ["ya29."]),
    _p("google-client-secret", r"\bGOCSPX-[0-9A-Za-z_\-]{20,}", ["gocspx-"]),
    _p("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})", ["gh", "github_pat_"]),
    _p("gitlab-token", r"\bgl(?:pat|dt|rt|cbt|ptt)-[A-Za-z0-9_\-]{20,}", ["gl"]),
    _p("slack-token", r"\bxox[abposre]-[A-Za-z0-9\-]{10,}", ["xox"]),
    _p("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+", ["hooks.slack.com"]),
    _p("openai-key", r"\bsk-(?:proj-|ant-(?:api\d+-)?|svcacct-)?[A-Za-z0-9_\-]{20,}", ["sk-"]),
    _p("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", ["npm_"]),
    _p("pypi-token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}", ["pypi-"]),
    _p("databricks-token", r"\bdapi[0-9a-f]{32}\b", ["dapi"]),
    _p("stripe-key", r"\b(?:sk|rk)_live_[A-Za-z0-9]{20,}", ["_live_"]),
    _p("jwt", r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}", ["eyj"]),
    _p(
        "bearer-token",
        r"(?i)\bbearer\s+((?=[A-Za-z0-9._~+/\-]*\d)[A-Za-z0-9._~+/\-]{8,}=*)",
        ["bearer"],
        group=1,
    ),
    _p(
        "basic-auth",
        r"(?i)\bauth(?:orization)?[\"']?\s*[:=]\s*[\"']?basic\s+([A-Za-z0-9+/]{8,}={0,2})",
        ["basic"],
        group=1,
    ),
    _p("url-credentials", r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@\"'<>]+:([^/\s@\"'<>]+)@", ["://"], group=1),
    _p(
        "azure-key",
        r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature|SharedSecretValue)=([^;\s\"'<>]+)",
        ["accountkey=", "sharedaccess", "sharedsecretvalue="],
        group=1,
    ),
    _p("azure-sas", r"(?i)[?&]sig=([A-Za-z0-9%+/=\-_]{16,})", ["sig="], group=1),
    _p(
        "aws-presigned",
        r"(?i)\bX-Amz-(?:Signature|Credential|Security-Token)=([^&\s\"'<>]+)",
        ["x-amz-"],
        group=1,
    ),
    _p(
        "kubeconfig-key",
        r"(?m)\b(?:client-key-data|client-certificate-data|id-token|refresh-token)[\"']?\s*:\s*[\"']?([^\s\"',}]+)",
        ["client-key-data", "client-certificate-data", "id-token", "refresh-token"],
        group=1,
    ),
    _p(
        "docker-auth",
        r"\"auth\"\s*:\s*\"([A-Za-z0-9+/=]{8,})\"",
        ['"auth"'],
        group=1,
    ),
    # --password hunter2, --hf_token=hf_..., -api-key 'x'
    _p(
        "secret-flag",
        r"(?i)(?<![\w-])--?[\w.-]*?(?:" + _ASSIGN_WORDS + r")(?:=|[ \t]+)[\"']?([^\s\"'<>;&|]+)",
        ["pass", "pwd", "secret", "token", "key", "credential", "connection"],
        group=1,
    ),
    # password=..., api_key: ..., "client_secret": "...", HF_TOKEN=... (anchored on the word: fast; the rest of
    # the name is found by looking back, see _assigned_name_is_secret)
    _p(
        "secret-assignment",
        r"(?i)(?=[pstac])(?:" + _ASSIGN_WORDS + r")[\"']?[ \t]*[:=][ \t]*[\"']?([^\s\"',;&<>}\]]+)",
        ["pass", "pwd", "secret", "token", "key", "credential", "connection"],
        group=1,
    ),
)

# values an assignment may have that are not secrets
_HARMLESS = re.compile(
    r"(?i)^(?:true|false|yes|no|on|off|null|none|nil|\d{1,6}|\*+|x+|\.\.\.|<[^>]*>|\$\{?[\w.]+\}?|\$\([\w.]+\)|"
    r"\{\{.*\}\}|redacted|changeme)$"
)


class Redactor:
    """Replaces credentials in strings, bytes, Kubernetes objects and whole Snapshots; counts replacements."""

    def __init__(self, extra_patterns: Iterable[str] = (), enabled: bool = True) -> None:
        self.enabled = enabled
        self.extra: list[Pattern] = []
        for i, rx in enumerate(extra_patterns):
            try:
                compiled = re.compile(rx)
            except re.error as e:
                raise InputError(f"--redact-pattern #{i + 1} {rx!r} is not a valid regular expression: {e}") from None
            self.extra.append(Pattern("custom", compiled, (), 1 if compiled.groups else 0))
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        return sum(self.counts.values())

    def _add(self, kind: str, n: int = 1) -> None:
        with self._lock:
            self.counts[kind] += n

    # -- text -------------------------------------------------------------------------------------------
    def text(self, s: str) -> str:
        if not self.enabled or not s:
            return s
        low = s.lower()
        for pat in (*self.extra, *SHAPES):
            if pat.needles and not any(n in low for n in pat.needles):
                continue
            new = self._apply(pat, s)
            if new != s:  # only a replacement changes what later patterns' needles may find
                s, low = new, new.lower()
        return s

    def _apply(self, pat: Pattern, s: str) -> str:
        n = 0

        def repl(m: re.Match[str]) -> str:
            nonlocal n
            if pat.group == 0:
                if m.group(0).startswith(MARK):
                    return m.group(0)
                n += 1
                return marker(pat.kind)
            val = m.group(pat.group)
            if val is None or val.startswith(MARK) or (pat.kind.startswith("secret-") and _HARMLESS.match(val)):
                return m.group(0)
            if pat.kind.startswith("secret-") and not _assigned_name_is_secret(m, pat.group):
                return m.group(0)
            n += 1
            start, end = m.span(pat.group)
            base = m.start(0)
            whole = m.group(0)
            return whole[: start - base] + marker(pat.kind) + whole[end - base :]

        out = pat.rx.sub(repl, s)
        if n:
            self._add(pat.kind, n)
        return out

    def bytes(self, data: bytes) -> bytes:
        """Redact a log (any bytes: invalid UTF-8 passes through unchanged)."""
        if not self.enabled or not data:
            return data
        text = data.decode("utf-8", errors="surrogateescape")
        out = self.text(text)
        return data if out == text else out.encode("utf-8", errors="surrogateescape")

    # -- objects ----------------------------------------------------------------------------------------
    def obj(self, value: Any) -> Any:
        """A redacted copy of a JSON-shaped value (a Kubernetes object, a list, a string)."""
        if not self.enabled:
            return value
        return self._value(value, None)

    def _value(self, v: Any, key: str | None) -> Any:
        if isinstance(v, dict):
            return self._dict(v)
        if isinstance(v, list):
            return self._list(v)
        if isinstance(v, str):
            if key is not None and sensitive_name(key) and v and not v.startswith(MARK) and not _HARMLESS.match(v):
                self._add("by-name")
                return marker("by-name")
            return self._string(v)
        return v

    def _dict(self, d: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        env_name = d.get("name") if isinstance(d.get("name"), str) and "value" in d else None
        for k, v in d.items():
            if k == "value" and env_name is not None and isinstance(v, str) and sensitive_name(env_name):
                if v and not v.startswith(MARK):
                    self._add("env")
                    out[k] = marker("env")
                else:
                    out[k] = v
                continue
            out[k] = self._value(v, k if isinstance(k, str) and not _is_reference_key(k) else None)
        return out

    def _list(self, items: list[Any]) -> list[Any]:
        out: list[Any] = []
        redact_next = False
        for item in items:
            if redact_next and isinstance(item, str) and item and not item.startswith(("-", MARK)):
                self._add("secret-flag")
                out.append(marker("secret-flag"))
                redact_next = False
                continue
            redact_next = False
            if isinstance(item, str) and item.startswith("-") and "=" not in item and sensitive_name(item):
                redact_next = True
            out.append(self._value(item, None))
        return out

    def _string(self, s: str) -> str:
        t = s.strip()
        if len(t) > 1 and t[0] in "{[" and t[-1] in "}]":
            try:
                parsed = json.loads(t)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict | list):
                before = self.count
                red = self._value(parsed, None)
                if self.count == before:
                    return s
                return json.dumps(red, separators=(",", ":"))
        return self.text(s)

    # -- a whole snapshot -------------------------------------------------------------------------------
    def snapshot(self, snap: Snapshot) -> Snapshot:
        """Redact every object, log window and metadata string of `snap` in place; returns it."""
        if not self.enabled:
            return snap
        for o in snap.objects:
            o.raw = self.obj(o.raw)
        for key, ref in list(snap.logs.items()):
            snap.logs[key] = self.log(ref)
        snap.meta = self.obj(snap.meta)
        # gap reasons quote server and transport errors: they leave the cluster too
        snap.not_collected = [Gap(g.what, self.text(g.reason)) for g in snap.not_collected]
        return snap

    def log(self, ref: LogRef) -> LogRef:
        """An in-memory, redacted copy of `ref`, holding exactly the bytes a bundle stores for it."""
        from ckpt_doctor.sources.bundle_write import log_bytes  # one definition of "what of a log we keep"

        content = self.bytes(log_bytes(ref))
        return LogRef(ref.pod, ref.container, ref.previous, head=content, size=len(content), namespace=ref.namespace)


def _is_reference_key(key: str) -> bool:
    """Kubernetes fields that name a Secret rather than hold one (`secretName`, `secretRef`, …)."""
    return key.lower().endswith(("name", "ref", "refs", "path", "file", "seconds", "id"))


def _assigned_name_is_secret(m: re.Match[str], group: int) -> bool:
    """The generic `name = value` / `--flag value` nets: only when the name itself looks like a credential."""
    text, start = m.string, m.start(0)
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        start -= 1  # the whole name: `db_password`, `aws_secret_access_key`
    name = text[start : m.start(group)]
    name = re.split(r"[\"']?[ \t]*[:=]|[ \t]", name.strip(), maxsplit=1)[0].strip("\"' \t")
    low = name.lower()
    if low.endswith(("secretname", "secret_name", "secretref", "secretkeyref")):
        return False
    return sensitive_name(name)


def redact_text(s: str) -> str:
    """One string through the default redactor (error lines, notes: every way out)."""
    return Redactor().text(s)

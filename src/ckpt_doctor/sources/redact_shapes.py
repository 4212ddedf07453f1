"""What a credential looks like in free text: the patterns of the redactor, and what each replaces.

Every pattern is RE2 (google-re2), compiled for bytes in Latin-1 mode (every byte is one character, so a log
that is not valid UTF-8 is scanned as it is), so each runs in time linear in its input: no pattern here can
be made to backtrack by a crafted line (`bench/bench_redact.py`, `tests/security/test_linear.py`).

A `Shape` finds candidate matches and says which byte spans of each are the secret; the rest of the match
(the flag, the variable name, the header, the scheme) stays, so a redacted line still says what it was.
Kinds, in the order they run:

- blocks: PEM / OpenSSH / PGP private keys (also a block's tail whose BEGIN line was cut off), PuTTY keys;
- token shapes: Hugging Face, AWS key ids, GCP, GitHub, GitLab, Slack, OpenAI, npm, PyPI, Databricks, Stripe,
  Docker, JWTs, Azure keys and SAS signatures, presigned-URL signatures;
- URLs with any userinfo (`scheme://user:pw@`, `scheme://:pw@`, `scheme://TOKEN@`);
- header lines (`Authorization:`, `Cookie:`, `X-*-Token:`, `Private-Token:`), bare `Bearer`/`Basic` values;
- netrc lines (`machine h login u password p`, on one line or several);
- login and auth commands in scripts (`huggingface-cli login --token X`, `wandb login X`, `docker login -p X`,
  `vault login X`, `ngrok authtoken X`, `aws configure set aws_secret_access_key X`);
- values after credential-like flags (`--api-key X`, `--hf_token=X`) and in `name = value` / `name: value`
  assignments whose name reads as a credential (see redact_names), and YAML/JSON `name:`/`value:` env pairs;
- `*_id` fields of a credential JSON object (next to `private_key`, `client_secret`...);
- base64 and URL-encoded forms of any of the above: a base64 run that decodes to text holding a secret or a
  `user:password` pair, a %-encoded run whose decoded text holds one.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_from_bytes, unquote_to_bytes

import re2

from ckpt_doctor.sources import redact_grammar as grammar
from ckpt_doctor.sources.redact_names import ambiguous_name, credential_position, looks_secret, sensitive_name

MARK = b"<redacted"

_LATIN1 = re2.Options()
_LATIN1.encoding = re2.Options.Encoding.LATIN1
_LATIN1.log_errors = False  # a third-party library never writes to the terminal


def rx(pattern: str) -> Any:
    """An RE2 pattern over bytes, one character per byte."""
    return re2.compile(pattern.encode("latin-1"), _LATIN1)


Span = tuple[int, int]


class Context:
    """What a shape may ask of the scanner: whether decoded text holds a secret, and that text redacted."""

    def __init__(self, depth: int, redact: Callable[[bytes, int], tuple[bytes, int]]) -> None:
        self.depth = depth
        self._redact = redact

    def redacted(self, data: bytes) -> tuple[bytes, int]:
        """`data` through every shape one level deeper (decoded forms), and how many replacements."""
        if self.depth >= 2:
            return data, 0
        return self._redact(data, self.depth + 1)


@dataclass(frozen=True)
class Shape:
    kind: str
    trigger: bytes  # an RE2 pattern that matches wherever the shape may find something (one Set pass: triggered)
    find: Callable[[bytes, Context], Iterator[Span | tuple[int, int, bytes]]]


# -- values that are not secrets ---------------------------------------------------------------------------

_HARMLESS = rx(
    r"(?i)(?:true|false|yes|no|on|off|null|none|nil|undefined|\d{1,6}|\*+|x+|\.\.\.|<[^>]*>|"
    r"\$[A-Za-z_][\w.]*|\$\{[^}]*\}|\$\([^)]*\)|env:[A-Za-z_]\w*|file:/\S*|fd:\d+|\{\{.*\}\}|%\([\w.]+\)s|redacted|changeme|required|optional|"
    r"os\.environ|os\.getenv|env|environ|stdin|-|enabled?|disabled?|always|never|auto|default|basic|bearer|token|"
    r"password|kerberos|ldap|oauth2?|oidc|sso|iam|saml|mtls|tls|insecure|anonymous|digest|negotiate|ntlm|hawk|ssws|"
    r"sharedkey|apikey|aws4-hmac-sha256)"
)


def harmless(value: bytes) -> bool:
    """Placeholders, booleans, small numbers, variable references: never worth redacting."""
    v = value.strip(b"\"' \t")
    return not v or v.startswith(MARK) or _HARMLESS.fullmatch(v) is not None


def _name(b: bytes) -> str:
    return b.decode("latin-1")


def _whole(pattern: str) -> Callable[[bytes, Context], Iterator[Span]]:
    r = rx(pattern)

    def find(data: bytes, ctx: Context) -> Iterator[Span]:
        for m in r.finditer(data):
            yield m.span()

    return find


def _group(r: Any, check: Callable[[Any], bool] | None = None) -> Callable[[bytes, Context], Iterator[Span]]:
    """Replace the first group of `r` that matched (of several alternatives), when `check(match)` allows."""

    def find(data: bytes, ctx: Context) -> Iterator[Span]:
        for m in r.finditer(data):
            for g in range(1, r.groups + 1):
                s, e = m.span(g)
                if s >= 0:
                    break
            else:
                continue
            if e > s and not harmless(data[s:e]) and (check is None or check(m)):
                yield s, e

    return find


# -- blocks ------------------------------------------------------------------------------------------------

_KEY_LABEL = r"[ A-Z0-9]*(?:PRIVATE|SECRET) KEY(?: BLOCK)?-----"
_PEM = _whole(r"(?s)-----BEGIN" + _KEY_LABEL + r".*?(?:-----END" + _KEY_LABEL + r"|\z)")
# the end of a block whose BEGIN line is not in this text (a log window cut inside the key)
_PEM_TAIL = _whole(
    r"(?:[A-Za-z0-9+/=]{16,}(?:\\n|\r?\n)[ \t]*)+(?:[A-Za-z0-9+/=]{1,15}(?:\\n|\r?\n)[ \t]*)?-----END" + _KEY_LABEL
)
_PUTTY = _whole(r"(?s)PuTTY-User-Key-File-\d+:.*?Private-MAC:[ \t]*[0-9a-fA-F]+")

# -- token shapes ------------------------------------------------------------------------------------------

TOKENS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("hf-token", r"\bhf_[A-Za-z0-9]{30,}", ("hf_",)),
    (
        "aws-access-key-id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{16}\b",
        ("akia", "asia", "abia", "acca", "agpa", "aida", "aipa", "anpa", "anva", "aroa", "apka"),
    ),
    ("gcp-api-key", r"\bAIza[0-9A-Za-z_\-]{35,}", ("aiza",)),
    ("gcp-oauth-token", r"\bya29\.[0-9A-Za-z_\-]{20,}", ("ya29.",)),
    ("google-client-secret", r"\bGOCSPX-[0-9A-Za-z_\-]{20,}", ("gocspx-",)),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})", ("gh", "github_pat_")),
    ("gitlab-token", r"\bgl(?:pat|dt|rt|cbt|ptt|soat|ft|imt)-[A-Za-z0-9_\-]{20,}", ("gl",)),
    ("slack-token", r"\bxox[abposre]-[A-Za-z0-9\-]{10,}", ("xox",)),
    ("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+", ("hooks.slack.com",)),
    ("openai-key", r"\bsk-(?:proj-|ant-(?:api\d+-)?|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", ("sk-",)),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", ("npm_",)),
    ("pypi-token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}", ("pypi-",)),
    ("databricks-token", r"\bdapi[0-9a-f]{32}\b", ("dapi",)),
    ("stripe-key", r"\b(?:sk|rk)_live_[A-Za-z0-9]{20,}", ("_live_",)),
    ("docker-pat", r"\bdckr_pat_[A-Za-z0-9_\-]{20,}", ("dckr_pat_",)),
    ("replicate-token", r"\br8_[A-Za-z0-9]{30,}", ("r8_",)),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}", ("eyj",)),
)

_AZURE_RX = rx(r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature|SharedSecretValue)=([^;\s\"'<>]+)")
_AZURE = _group(_AZURE_RX)
_SAS_RX = rx(r"(?i)[?&]sig=([A-Za-z0-9%+/=_\-]{16,})")
_SAS = _group(_SAS_RX)
_PRESIGNED_RX = rx(r"(?i)\bX-(?:Amz|Goog)-(?:Signature|Credential|Security-Token)=([^&\s\"'<>]+)")
_PRESIGNED = _group(_PRESIGNED_RX)

# -- URLs with userinfo -------------------------------------------------------------------------------------

_URL = rx(r"(?i)\b[a-z][a-z0-9+.\-]*://([^/\s@\"'<>?#\\]+)@")
_USERNAME = rx(r"[a-z_][a-z0-9_.\-]{0,31}")


def _url_userinfo(data: bytes, ctx: Context) -> Iterator[Span]:
    for m in _URL.finditer(data):
        s, e = m.span(1)
        info = data[s:e]
        colon = info.find(b":")
        if colon >= 0:
            if e > s + colon + 1 and not harmless(info[colon + 1 :]):
                yield s + colon + 1, e  # keep the user name: it says whose credential it was
        elif not harmless(info) and _USERNAME.fullmatch(info) is None:
            yield s, e  # `https://TOKEN@host`: the user part is the credential


# -- headers, bearer and basic -------------------------------------------------------------------------------

_HEADER = rx(
    r"(?i)(?:^|[^\w\-])((?:proxy-)?authorization|(?:set-)?cookie|private-token|api-?key|"
    r"x-[\w\-]*(?:token|key|secret|auth|session|signature|password|credential)[\w\-]*)[ \t]*:[ \t]*([^\r\n\"']+)"
)
_SCHEME = rx(
    r"(?i)(?:bearer|basic|token|digest|negotiate|ntlm|aws4-hmac-sha256|hawk|oauth|ssws|apikey|key|sharedkey)[ \t]+"
)


_TOKEN68 = rx(r"[A-Za-z0-9._~+/\-]+=*")
_CLOSERS = {ord(")"): ord("("), ord("]"): ord("["), ord("}"): ord("{")}


def _unbalanced_tail(value: bytes) -> bytes:
    """The value without closing brackets it did not open (`(Cookie: a=b)` ends before the `)`)."""
    v = value.rstrip()
    while v and v[-1] in _CLOSERS and v.count(v[-1]) > v.count(_CLOSERS[v[-1]]):
        v = v[:-1].rstrip()
    return v


def _headers(data: bytes, ctx: Context) -> Iterator[Span]:
    for m in _HEADER.finditer(data):
        s, e = m.span(2)
        value = _unbalanced_tail(data[s:e])
        sch = _SCHEME.match(value)
        if sch is not None:  # keep the scheme; Bearer, Basic and the like: the credential is one token after it
            s += sch.end()
            one = value[: sch.end()].split()[0].lower() not in (b"digest", b"aws4-hmac-sha256", b"hawk", b"oauth")
            tok = _TOKEN68.match(value, sch.end()) if one else None
            value = value[sch.end() : tok.end()] if tok is not None else value[sch.end() :]
        if value and not harmless(value):
            yield s, s + len(value)


def _has_digit_or_long(m: Any) -> bool:
    v = m.group(1)
    return any(48 <= c <= 57 for c in v) or len(v) >= 20


_BEARER_RX = rx(r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/\-]{8,}=*)")
_BEARER = _group(_BEARER_RX, _has_digit_or_long)
_BASIC_RX = rx(r"(?i)\bbasic[ \t]+([A-Za-z0-9+/]{8,}={0,2})")


def _basic(data: bytes, ctx: Context) -> Iterator[Span]:
    for m in _BASIC_RX.finditer(data):
        s, e = m.span(1)
        if _b64_secret(data[s:e], ctx, require_pair=False):
            yield s, e


# -- netrc ---------------------------------------------------------------------------------------------------

_NETRC_RX = rx(
    r"(?i)\b(?:machine[ \t\r\n]+\S+|default)(?:[ \t\r\n]+(?:login|account|port)[ \t\r\n]+\S+)*"
    r"[ \t\r\n]+password[ \t\r\n]+(\S+)"
)
_NETRC = _group(_NETRC_RX)
_NETRC_LINE_RX = rx(r"(?im)^[ \t]*(?:password|passwd)[ \t]+(\S+)[ \t]*$")
_NETRC_LINE = _group(_NETRC_LINE_RX)

# -- login and auth commands, and credentials a command's grammar gives ------------------------------------

_LOGIN_LINE = rx(
    r"(?im)^[^\r\n]*?(?:\b(?:login|auth|authtoken|add-authtoken|set-credentials|(?:config|configure)[ \t]+set)\b|"
    r"(?:^|[\s\"'/;&|(`=])(?:"
    + "|".join(re2.escape(t) for t in sorted(grammar.TOOLS, key=len, reverse=True))
    + r")(?:$|[\s\"';&|)`]))[^\r\n]*"
)
_LOGIN_TRIGGER = (
    rb"(?i)(?:login|auth|set|"
    + b"|".join(re2.escape(t.encode()) for t in sorted(grammar.TOOLS, key=len, reverse=True))
    + rb")"
)
TRIGGERS = frozenset({"login", "auth", "authtoken", "add-authtoken", "set-credentials"})
_BTRIGGERS = frozenset(t.encode() for t in TRIGGERS)
# tools whose login takes the secret as a positional argument
POSITIONAL_TOOLS = frozenset({"wandb", "vault", "ngrok", "comet", "neptune", "replicate", "modal", "kaggle"})
# short flags that carry a password or token after a login/auth word
SECRET_SHORT = frozenset({"p", "t"})
_SEPARATORS = (b"&&", b"||", b";", b"|", b"&", b"(", b")", b"`", b"\\n", b"$(")
_NOT_SECRET_ARG = rx(r"(?i)(?:[a-z][a-z0-9+.\-]*://.*|[/~.].*)")
MAX_NESTING = 3  # quoted commands inside quoted commands (`sh -c "sudo -u x sh -c '…'"`), looked into this deep


def split_command(data: bytes, start: int = 0, end: int | None = None) -> list[tuple[list[Span], bytes]]:
    """The words of each simple command of a shell line, as byte spans (quotes removed from the spans), each with
    the separator that ends it (`|`, `;`, `&&`... or b"" at the end)."""
    end = len(data) if end is None else end
    commands: list[tuple[list[Span], bytes]] = []
    words: list[Span] = []
    i = start
    while i < end:
        c = data[i]
        if c in b" \t\r\n":
            i += 1
            continue
        sep = next((s for s in _SEPARATORS if data.startswith(s, i)), None)
        if sep is not None:
            if words:
                commands.append((words, sep))
                words = []
            i += len(sep)
            continue
        if c in b"\"'":
            close = data.find(bytes([c]), i + 1, end)
            close = end if close < 0 else close
            words.append((i + 1, close))
            i = close + 1
            continue
        j = i
        while j < end and data[j] not in b" \t\r\n;&|()`":
            if data[j] in b"\"'":  # --token="x y": the quotes end with the word
                close = data.find(bytes([data[j]]), j + 1, end)
                j = end if close < 0 else close + 1
                continue
            if data.startswith(b"\\n", j):
                break
            j += 1
        words.append((i, j))
        i = j
    if words:
        commands.append((words, b""))
    return commands


_STDIN_FLAGS = (b"--password-stdin", b"--with-token", b"--token-stdin", b"--stdin", b"--api-key-stdin")


def _reads_stdin_flag(words: list[bytes]) -> bool:
    """A login that reads its secret from stdin, whatever the tool (`gh auth login --with-token`)."""
    return any(w.split(b"=", 1)[0] in _STDIN_FLAGS for w in words)


def _unquote(b: bytes) -> tuple[bytes, int]:
    """A word without its surrounding quotes, and the offset of what is left."""
    if len(b) >= 2 and b[0] in b"\"'" and b[-1] == b[0]:
        return b[1:-1], 1
    return b, 0


Hit = grammar.Hit


def _trigger(lowered: list[bytes]) -> int | None:
    """Where the login word is (`docker login`, `hf auth login`, `aws configure set`)."""
    for i, w in enumerate(lowered):
        if w in _BTRIGGERS or (w == b"set" and i and lowered[i - 1] in (b"config", b"configure")):
            return i
    return None


def _flag(words: list[bytes], j: int, out: list[Hit]) -> int:
    """Judge the flag at `j` after a login word (appending its secret to `out`); returns how many words it used."""
    w = words[j]
    flag, eq, val = w.partition(b"=")
    name = _name(flag.lstrip(b"-"))
    short = not flag.startswith(b"--")
    if eq:
        secret = (short and name in SECRET_SHORT) or credential_position(name, _name(val))
        if secret and not harmless(val):
            inner, q = _unquote(val)
            off = len(flag) + 1 + q
            out.append((j, off, off + len(inner)))
        return 1
    takes = (short and name in SECRET_SHORT) or sensitive_name(name)
    if not takes or j + 1 >= len(words) or words[j + 1].startswith(b"-"):
        return 1
    if not harmless(words[j + 1]):
        out.append(j + 1)
    return 2


def login_spans(words: list[bytes]) -> list[Hit]:
    """Which words of one command (as bytes) are secrets after a login word: an index, or (index, start, end)."""
    lowered = [w.lower() for w in words]
    trig = _trigger(lowered)
    if trig is None:
        return []
    start = grammar.command_start(words)
    tool = grammar.tool_name(words[start]) if start < len(words) else ""
    out: list[Hit] = []
    positional: list[int] = []
    j = trig + 1
    while j < len(words):
        if words[j].startswith(b"-") and len(words[j]) > 1:
            j += _flag(words, j, out)
            continue
        positional.append(j)
        j += 1
    if lowered[trig] == b"set":  # config set NAME VALUE
        for a, b in itertools.pairwise(positional):
            if b == a + 1 and credential_position(_name(words[a]), _name(words[b])) and not harmless(words[b]):
                out.append(b)
        return out
    by_position = tool in POSITIONAL_TOOLS or lowered[trig] in (b"authtoken", b"add-authtoken")
    for p in positional:
        w = words[p]
        if harmless(w) or lowered[p] in _BTRIGGERS:
            continue
        positional_secret = by_position and b"=" not in w and _NOT_SECRET_ARG.fullmatch(w) is None
        if positional_secret or looks_secret(_name(w)):
            out.append(p)
    return out


def command_spans(words: list[bytes]) -> tuple[list[Hit], bool]:
    """The credentials of one simple command: after a login word, and by its tool's grammar (redact_grammar); and
    whether the command reads a password on stdin (what an `echo` pipes into it is one)."""
    hits, stdin = grammar.grammar_spans(words, harmless)
    if any(w.lower() in _BTRIGGERS or w.lower() == b"set" for w in words):
        hits = hits + login_spans(words)
    return hits, stdin or _reads_stdin_flag(words)


def _login(data: bytes, ctx: Context) -> Iterator[Span]:
    for m in _LOGIN_LINE.finditer(data):
        yield from sorted(set(_line_commands(data, *m.span(), 0)))


def _line_commands(data: bytes, start: int, end: int, depth: int) -> list[Span]:
    """The credentials of the commands in data[start:end], and of the commands quoted in them (`sh -c "…"`)."""
    out: list[Span] = []
    cmds = split_command(data, start, end)
    texts = [[data[s:e] for s, e in spans] for spans, _ in cmds]
    reads = [command_spans(words) for words in texts]
    for k, (spans, sep) in enumerate(cmds):
        words = texts[k]
        hits: list[Hit] = list(reads[k][0])
        if sep == b"|" and k + 1 < len(reads) and reads[k + 1][1]:
            hits += grammar.echoed(words, harmless)  # echo SECRET | sudo -S …, | docker login --password-stdin
        whole = {h for h in hits if isinstance(h, int)}
        for hit in hits:
            if isinstance(hit, int):
                out.append(spans[hit])
            else:
                i, a, b = hit
                out.append((spans[i][0] + a, spans[i][0] + b))
        if depth >= MAX_NESTING:
            continue
        for i, ((s, e), w) in enumerate(zip(spans, words, strict=True)):
            quoted = s > start and data[s - 1 : s] in (b'"', b"'")
            if quoted and i not in whole and (b" " in w or b"\t" in w):
                out += _line_commands(data, s, e, depth + 1)  # sh -c "…", an event quoting `exec of "…"`
    return out


# -- flags and assignments -------------------------------------------------------------------------------------

_STEMS = r"(?:pass|pwd|secret|token|key|cred|auth|cookie|session|private|sas|dsn|sig|pat|pw|pin|otp)"
# a value: double-quoted, single-quoted (either with a Python string prefix: `b'…'`, botocore's headers), or bare
_VALUE = (
    r"(?:[bBrRuU]{0,2}\"((?:[^\"\\\r\n]|\\.)*)\"|[bBrRuU]{0,2}'([^'\r\n]*)'|"
    r"([^\s\"',;&|<>{}()\[\]`=][^\s\"',;&|<>{}()\[\]`]*))"
)
_FLAG = rx(r"(?i)(?:^|[^\w\-])(--?(?:[a-z][\w.\-]*?)?" + _STEMS + r"[\w.\-]*)(?:=|[ \t]+)" + _VALUE)
_ASSIGN = rx(r"(?i)([\w.\-]*" + _STEMS + r"[\w.\-]*)[\"']?\]?[ \t]*(?::|=)[ \t]*" + _VALUE)
# ("HF_TOKEN", "value"): a pair in code (os.environ.setdefault, a tuple, a dict built from pairs)
_PAIR_ARGS = rx(r"(?i)[\"']([\w.\-]*" + _STEMS + r"[\w.\-]*)[\"'][ \t]*,[ \t]*" + _VALUE)
_ENV_PAIR = rx(
    r"(?i)\bname[\"']?[ \t]*[:=][ \t]*[\"']?([A-Za-z_][\w.\-]*)[\"']?[ \t]*(?:,[ \t]*|\r?\n[ \t]*-?[ \t]*|\\n[ \t]*)"
    r"[\"']?value[\"']?[ \t]*[:=][ \t]*" + _VALUE
)


def _value_span(m: Any, first: int) -> Span | None:
    for g in (first, first + 1, first + 2):
        s, e = m.span(g)
        if s >= 0:
            return s, e
    return None


def _named(r: Any, name_group: int, value_group: int, flags: bool) -> Callable[[bytes, Context], Iterator[Span]]:
    def find(data: bytes, ctx: Context) -> Iterator[Span]:
        for m in r.finditer(data):
            span = _value_span(m, value_group)
            if span is None or span[1] <= span[0]:
                continue
            s, e = span
            value = data[s:e]
            if harmless(value) or (flags and value.startswith(b"-")):
                continue
            if e < len(data) and data[e : e + 1] in (b"(", b"["):
                continue  # a call or subscript in code: `token = os.environ["X"]`
            name = _name(m.group(name_group))
            if name.lower().endswith(("secretname", "secret_name", "secretref", "secretkeyref")):
                continue
            bare = m.span(value_group + 2)[0] >= 0
            if bare and (value.endswith(b":") or (not flags and _logger(data, m, name_group, s, e))):
                continue  # a label (`botocore.auth:Signature:`), a message (`google.auth._default:Checking None…`)
            if credential_position(name, _name(value)):
                yield s, (_yaml_line_end(data, m, name_group, s, e) if bare and not flags else e)

    return find


_YAML_KEY_PREFIX = rx(r"[ \t]*(?:-[ \t]+)?")


def _yaml_line_end(data: bytes, m: Any, name_group: int, s: int, e: int) -> int:
    """A YAML `key: value` line (the key first on its line, `: ` after it): a plain value runs to the end of the line
    (`password: correct horse battery staple`), a ` #` comment excepted."""
    prefix = data[data.rfind(b"\n", 0, m.start(name_group)) + 1 : m.start(name_group)]
    if not data.startswith(b": ", m.end(name_group)) or _YAML_KEY_PREFIX.fullmatch(prefix) is None:
        return e
    end = data.find(b"\n", e)
    end = len(data) if end < 0 else end
    rest = data[e:end]
    cut = rest.find(b" #")
    return e + len((rest if cut < 0 else rest[:cut]).rstrip(b" \t\r"))


def _logger(data: bytes, m: Any, name_group: int, s: int, e: int) -> bool:
    """`google.auth._default:Checking None for …`: Python logging's `%(name)s:%(message)s`, a dotted logger name
    right before a colon and a message of words, not a credential (a passphrase after `password: ` still goes)."""
    if data[m.end(name_group) : s] != b":" or b"." not in m.group(name_group) or not data[s:e].isalpha():
        return False
    return data[e : e + 1] == b" " and data[e + 1 : e + 2].isalpha()


# -- credential JSON objects ------------------------------------------------------------------------------------

_CRED_KEY = rx(
    r"(?i)[\"'](?:private_key|privateKey|client_secret|clientSecret|secret_access_key|SecretAccessKey|refresh_token|"
    r"refreshToken|password|secret|api_key|apiKey|access_token|accessToken)[\"'][ \t]*:"
)
_ID_FIELD = rx(r"[\"']([\w\-]*(?:_id|_ID|Id|ID))[\"'][ \t]*:[ \t]*[\"']((?:[^\"'\\\r\n]|\\.)*)[\"']")
NEAR = 4096  # how far (bytes) an id may be from a secret field of the same object


def _json_ids(data: bytes, ctx: Context) -> Iterator[Span]:
    keys = [m.start() for m in _CRED_KEY.finditer(data)]
    if not keys:
        return
    for m in _ID_FIELD.finditer(data):
        at = m.start()
        i = bisect.bisect_left(keys, at)
        near = any(0 <= j < len(keys) and abs(keys[j] - at) <= NEAR for j in (i - 1, i))
        s, e = m.span(2)
        if near and e > s and not harmless(data[s:e]):
            yield s, e


# -- config formats: XML elements and Hadoop properties, .pgpass lines ------------------------------------------

_XML_ELEMENT = rx(r"<([A-Za-z_][\w.:\-]*)(?:[ \t][^<>\r\n]*)?>[ \t]*([^<\r\n]*?)[ \t]*</([A-Za-z_][\w.:\-]*)[ \t]*>")
# Hadoop's core-site.xml and friends: <name>fs.s3a.secret.key</name> <value>X</value>
_XML_PROPERTY = rx(
    r"<name>[ \t\r\n]*([^<\r\n]{1,256}?)[ \t\r\n]*</name>[ \t\r\n]*<value>[ \t\r\n]*([^<\r\n]*?)[ \t\r\n]*</value>"
)
_XML_NOT_SECRET = rx(r"(?i)(?:[a-z][a-z0-9+.\-]*://.*|[/~].*|\$\{.*|file:.*)")


def _xml_value(name: bytes, data: bytes, s: int, e: int) -> bool:
    value = data[s:e]
    if e <= s or harmless(value) or _XML_NOT_SECRET.fullmatch(value) is not None:
        return False
    return credential_position(_name(name.rsplit(b":", 1)[-1]), _name(value))


def _xml(data: bytes, ctx: Context) -> Iterator[Span]:
    """Maven's settings.xml `<password>X</password>`, `<passphrase>`; any element whose tag names a credential."""
    for m in _XML_ELEMENT.finditer(data):
        s, e = m.span(2)
        if m.group(1) == m.group(3) and _xml_value(m.group(1), data, s, e):
            yield s, e


def _xml_property(data: bytes, ctx: Context) -> Iterator[Span]:
    for m in _XML_PROPERTY.finditer(data):
        s, e = m.span(2)
        if _xml_value(m.group(1).strip(), data, s, e):
            yield s, e


# hostname:port:database:username:password (a field may be `*`; `\:` escapes a colon)
_PGPASS_RX = rx(
    r"(?m)^[ \t]*(?:[^:\s#\\]|\\.)(?:[^:\s\\]|\\.)*:(?:\d+|\*):(?:[^:\s\\]|\\.)+:(?:[^:\s\\]|\\.)+:((?:[^\s\\]|\\.)+)"
    r"[ \t]*\r?$"
)
_PGPASS = _group(_PGPASS_RX)

# -- JSON inside a JSON string: `{"body": "{\"password\": \"X\"}"}` ------------------------------------------------

_JSON_STRING = rx(r'"((?:[^"\\\r\n]|\\.)*\\"(?:[^"\\\r\n]|\\.)*)"')


def _nested_json(data: bytes, ctx: Context) -> Iterator[tuple[int, int, bytes]]:
    """A JSON string whose text is JSON (escaped quotes): unescaped, redacted one level deeper, escaped again."""
    if ctx.depth >= 2:
        return
    for m in _JSON_STRING.finditer(data):
        s, e = m.span(1)
        try:
            text = json.loads(b'"' + data[s:e] + b'"')
        except ValueError:
            continue
        red, n = ctx.redacted(text.encode("utf-8", "surrogatepass"))
        if n:
            again = json.dumps(red.decode("utf-8", "surrogatepass"), ensure_ascii=False)[1:-1]
            yield s, e, again.encode("utf-8", "surrogatepass")


# -- values on the line after their key: botocore's `Signature:` line, YAML ------------------------------------------

_KEY_EOL = rx(r"(?m)(?:^|[^\w.\-])([A-Za-z_][\w.\-]*)[\"']?[ \t]*:[ \t]*([|>][+\-0-9]*)?[ \t]*\r?$")
# what may stand before such a key on its line: indentation, a YAML list's dash, or a log line's prefix ending
# in `:` or ` - ` (`DEBUG:botocore.auth:Signature:`, `… - botocore.auth - DEBUG - Signature:`)
_KEY_PREFIX = rx(r"[ \t]*(?:-[ \t]+)?[\"']?|[^\r\n]*(?::|[ \t]-[ \t]+|\][ \t]*)")
_NOT_A_VALUE = (b"-", b"#", b"{", b"[", b"<", b"&", b"*", b"!", b"|", b">", b"%", MARK)


def _line_at(data: bytes, pos: int) -> tuple[int, bytes]:
    """The line starting at `pos`: where it ends (its newline, or the end), and its text without a `\\r`."""
    end = data.find(b"\n", pos)
    end = len(data) if end < 0 else end
    return end, data[pos:end].rstrip(b"\r")


def _indent(line: bytes) -> int:
    return len(line) - len(line.lstrip(b" \t"))


def _next_line(data: bytes, ctx: Context) -> Iterator[Span]:
    done = 0  # the end of the last block scalar read: a key inside it is part of its value (and read once)
    for m in _KEY_EOL.finditer(data):
        name = _name(m.group(1))
        if m.start() < done or not (sensitive_name(name) or ambiguous_name(name)) or m.end() >= len(data):
            continue
        prefix = data[data.rfind(b"\n", 0, m.start(1)) + 1 : m.start(1)]
        if _KEY_PREFIX.fullmatch(prefix) is None:
            continue  # `if not token:` is code, not a key
        key_indent = _indent(prefix + b"x")
        pos = m.end() + 1  # past the newline
        if m.group(2):  # a YAML block scalar: the lines indented under the key
            spans: list[Span] = []
            while pos < len(data):
                end, line = _line_at(data, pos)
                if line.strip() and _indent(line) <= key_indent:
                    break
                if line.strip():
                    spans.append((pos + _indent(line), pos + len(line.rstrip())))
                pos = end + 1
            done = pos
            if spans and sensitive_name(name) and not harmless(data[spans[0][0] : spans[-1][1]]):
                yield from spans
            continue
        _end, line = _line_at(data, pos)
        value = line.strip()
        inner, q = _unquote(value)
        if not inner or any(c in inner for c in b" \t") or value.endswith(b":") or value.startswith(_NOT_A_VALUE):
            continue
        if harmless(inner) or not credential_position(name, _name(inner)):
            continue
        if _indent(line) <= key_indent and not looks_secret(_name(inner)):
            continue  # a line of its own (a log's next line) is a value only when it looks like a secret
        start = pos + _indent(line) + q
        yield start, start + len(inner)


# -- Python calls in free text (a traceback quotes the line): auth tuples, *Auth("u", "p"), .login("u", "p") --------
# (Python source itself, a ConfigMap's `*.py`, is parsed: redact_python)

_PY_STR = r"[bBrRuU]{0,2}[\"'][^\"'\r\n]*[\"']"
_PY_SECOND = r"[ \t]*,[ \t]*[bBrRuU]{0,2}[\"']([^\"'\r\n]+)[\"']"
_PY_AUTH_RX = rx(
    r"(?:\b(?:auth|basic_auth|http_auth|proxy_auth|credentials)[ \t]*=[ \t]*[\(\[][ \t]*|\b\w*Auth\([ \t]*|"
    r"\.login\([ \t]*)" + _PY_STR + _PY_SECOND
)
_PY_AUTH = _group(_PY_AUTH_RX)


# -- a token wrapped over two lines ----------------------------------------------------------------------------------

WRAP_MIN = 64  # a line this long or longer may have been wrapped at a terminal's or a collector's width
_CONTINUATION = rx(r"[A-Za-z0-9+/=_\-.~%]{4,}")
_NOT_CONTINUATION = rx(r"[\d\-T:Z.+]+|[a-z]+|[A-Z][a-z]+")


def wrapped_end(data: bytes, s: int, e: int) -> int:
    """Where a credential found at data[s:e] really ends: past the next line when the line it ends was wrapped
    (long, the credential reaches its end) and the next line is nothing but the rest of a token."""
    if e - s < 8 or e >= len(data):
        return e
    nl = 2 if data.startswith(b"\r\n", e) else 1 if data[e] == 10 else 0
    if not nl or any(c in data[s:e] for c in b" \t"):
        return e
    width = e - (data.rfind(b"\n", 0, s) + 1)
    if width < WRAP_MIN:
        return e
    _end, cont = _line_at(data, e + nl)
    if len(cont) > width or _CONTINUATION.fullmatch(cont) is None or _NOT_CONTINUATION.fullmatch(cont) is not None:
        return e
    digit, mixed = any(48 <= c <= 57 for c in cont), cont.lower() != cont and cont.upper() != cont
    if harmless(cont) or not (digit or mixed):
        return e
    return e + nl + len(cont)


# -- encoded forms ------------------------------------------------------------------------------------------------

_B64_WRAPPED = rx(r"(?:[A-Za-z0-9+/]{60,}={0,2}(?:\\n|\r?\n)[ \t]*)+[A-Za-z0-9+/]{4,}={0,2}")
_B64 = rx(r"[A-Za-z0-9+/_\-]{12,}={0,2}")
_PAIR = rx(r"[^\s:]{1,128}:[^\s]{3,}")
_B64_MAX = 1 << 16


_PRINTABLE = bytes(range(32, 127)) + b"\t\n\r"


def _printable(b: bytes) -> bool:
    """Text, not binary: at most 5% of the bytes outside printable ASCII."""
    return bool(b) and len(b.translate(None, _PRINTABLE)) <= 0.05 * len(b)


def _b64decode(run: bytes) -> bytes | None:
    s = run.replace(b"\\n", b"").translate(None, b" \t\r\n")
    if len(s) > _B64_MAX:
        s = s[:_B64_MAX]
    s = s.rstrip(b"=")
    if len(s) % 4 == 1:
        return None
    s += b"=" * (-len(s) % 4)
    try:
        if b"-" in s or b"_" in s:
            return base64.urlsafe_b64decode(s)
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return None


def _b64_secret(run: bytes, ctx: Context, require_pair: bool = False) -> bool:
    """Does the base64 run `run` decode to text that holds a credential?"""
    decoded = _b64decode(run)
    if decoded is None or not _printable(decoded):
        return False
    if _PAIR.fullmatch(decoded.strip()) is not None:
        return True  # user:password, client_id:client_secret (a Basic credential)
    if require_pair:
        return False
    _, n = ctx.redacted(decoded)
    return n > 0


def _base64(pattern: Any) -> Callable[[bytes, Context], Iterator[Span]]:
    def find(data: bytes, ctx: Context) -> Iterator[Span]:
        if ctx.depth >= 2:
            return
        for m in pattern.finditer(data):
            run = m.group(0)
            if run.lower() == run or run.upper() == run:
                continue  # base64 of text mixes cases; names, hex digests and paths in one case are left
            if _b64_secret(run, ctx):
                yield m.span()

    return find


_PCT = rx(r"[^\s\"'<>]*%[0-9A-Fa-f]{2}[^\s\"'<>]*")
_SAFE = b"/:@?&=+,;<>-_.~!$'()*[]"


def _urlencoded(data: bytes, ctx: Context) -> Iterator[tuple[int, int, bytes]]:
    """A %-encoded run whose decoded text holds a secret: replaced by the redacted text, re-encoded."""
    if ctx.depth >= 2:
        return
    for m in _PCT.finditer(data):
        run = m.group(0)
        decoded = unquote_to_bytes(run)
        if decoded == run:
            continue
        red, n = ctx.redacted(decoded)
        if n:
            yield m.start(), m.end(), quote_from_bytes(red, safe=_SAFE).encode("ascii")


# -- the table -----------------------------------------------------------------------------------------------------

_B64_TRIGGER = r"[A-Za-z0-9+/_\-]*(?:[A-Z][A-Za-z0-9+/_\-]*[a-z]|[a-z][A-Za-z0-9+/_\-]*[A-Z])"


def _p(r: Any) -> bytes:
    return bytes(r.pattern)


SHAPES: tuple[Shape, ...] = (
    Shape("private-key", _p(rx(r"-----BEGIN" + _KEY_LABEL)), _PEM),
    Shape("private-key", _p(rx(r"-----END" + _KEY_LABEL)), _PEM_TAIL),
    Shape("private-key", b"PuTTY-User-Key-File-", _PUTTY),
    *(Shape(kind, _p(rx(p)), _whole(p)) for kind, p, _needles in TOKENS),
    Shape("azure-key", _p(_AZURE_RX), _AZURE),
    Shape("azure-sas", _p(_SAS_RX), _SAS),
    Shape("presigned-url", _p(_PRESIGNED_RX), _PRESIGNED),
    Shape("url-credentials", _p(_URL), _url_userinfo),
    Shape("header", _p(_HEADER), _headers),
    Shape("bearer-token", _p(_BEARER_RX), _BEARER),
    Shape("basic-auth", _p(_BASIC_RX), _basic),
    Shape("netrc", _p(_NETRC_RX), _NETRC),
    Shape("netrc", _p(_NETRC_LINE_RX), _NETRC_LINE),
    # (triggers simpler than the patterns: a superset of where they match, cheap in the one Set pass)
    Shape("xml", b"</", _xml),
    Shape("xml", b"</name>", _xml_property),
    Shape("pgpass", rb":(?:\d+|\*):[^:\s]+:[^:\s]+:", _PGPASS),
    Shape("python-call", rb"(?:auth|credentials)[ \t]*=[ \t]*[\(\[]|Auth\(|\.login\(", _PY_AUTH),
    Shape("nested-json", rb'\\"', _nested_json),
    Shape("next-line", rb":[ \t]*(?:[|>][+\-0-9]*)?[ \t]*\r?\n", _next_line),
    Shape("login", _LOGIN_TRIGGER, _login),
    Shape("secret-flag", _p(_FLAG), _named(_FLAG, 1, 2, flags=True)),
    Shape("env", _p(_ENV_PAIR), _named(_ENV_PAIR, 1, 2, flags=False)),
    Shape("secret-assignment", _p(_ASSIGN), _named(_ASSIGN, 1, 2, flags=False)),
    Shape("secret-assignment", _p(_PAIR_ARGS), _named(_PAIR_ARGS, 1, 2, flags=False)),
    Shape("credential-json", _p(_CRED_KEY), _json_ids),
    Shape("base64", _p(_B64_WRAPPED), _base64(_B64_WRAPPED)),
    Shape("base64", _B64_TRIGGER.encode(), _base64(_B64)),
    Shape("url-encoded", _p(_PCT), _urlencoded),
)


def _trigger_set() -> Any:
    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.LATIN1
    opts.log_errors = False
    opts.max_mem = 64 << 20
    tset = re2.Set.SearchSet(opts)
    for shape in SHAPES:
        tset.Add(shape.trigger)
    tset.Compile()
    return tset


_TRIGGERS = _trigger_set()


def triggered(data: bytes) -> set[int]:
    """The indices of the SHAPES that may find something in `data`: one RE2 pass over it for all of them."""
    return set(_TRIGGERS.Match(data) or ())

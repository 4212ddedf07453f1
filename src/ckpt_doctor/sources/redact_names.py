"""Which names hold credentials: env vars, map keys, CLI flags, header and JSON field names.

A name is split into lower-case words (`AWS_SECRET_ACCESS_KEY`, `hf-token`, `apiKey`, `client.secret`,
`PGPASSWORD`) and judged by kind, not by a list of known variables:

- a word that *contains* a strong part (`password`, `passwd`, `passphrase`, `secret`, `credential`, `cookie`)
  makes the name a credential: `PGPASSWORD`, `MLFLOW_TRACKING_PASSWORD`, `DB_SECRET`, `cookiejar`;
- a word that *is* a credential word (`token`, `auth`, `session`, `private`, `pass`, `pwd`, `apikey`, ...), or
  ends like one (`hftoken`, `oauth`, `dbpass`, `apikey`, `authkey`), does too;
- `key` is a credential word only inside a name of two or more words (`SOME_KEY`, `api_key`, `keyId`): a bare
  `key` is what Kubernetes selectors, tolerations and `secretKeyRef` call a *reference*, so it is *ambiguous*:
  its value is redacted only when it looks like a secret (see `looks_secret`);
- a name whose last word says it *describes* a credential rather than holds it is not one: `SECRET_NAME`,
  `HF_TOKEN_PATH`, `secretKeyRef`, `TOKEN_URL`, `AUTH_TYPE`, `SESSION_DIR`, `PASSWORD_FILE`;
- `*_id` is a credential only next to a key, secret or session word (`private_key_id`, `AWS_ACCESS_KEY_ID`,
  `SESSION_ID`), never `pad_token_id` or `client_id` (that one is redacted inside a credential JSON object);
- near misses stay: `KEYBOARD`, `MONKEY`, `TOKENIZER_PATH`, `TOKENIZERS_PARALLELISM`, `MAX_TOKENS`, `pad_token`,
  `CKPT_DIR`, `PWD`, `AUTHOR`, `BYPASS_CACHE`, `PASSTHROUGH`.
"""

from __future__ import annotations

import itertools
import math
import re
from functools import lru_cache

import re2

# a word containing one of these is a credential word
STRONG_PARTS = ("password", "passwd", "passphrase", "passcode", "secret", "credential", "cookie")
# a word equal to one of these is a credential word
WORDS = frozenset(
    {
        "token",
        "auth",
        "authorization",
        "authtoken",
        "session",
        "sessionid",
        "private",
        "privatekey",
        "pass",
        "pw",
        "pwd",
        "apikey",
        "apitoken",
        "creds",
        "cred",
        "sas",
        "pat",
        "dsn",
        "bearer",
        "jwt",
        "otp",
        "totp",
        "pin",
        "sig",
    }
)
# a word ending in `key` / `pass` / `pwd` is a credential word when what comes before is one of these
KEY_PREFIXES = frozenset(
    {
        "api",
        "access",
        "secret",
        "private",
        "master",
        "signing",
        "license",
        "licence",
        "auth",
        "enc",
        "encryption",
        "hmac",
        "ssh",
        "gpg",
        "pgp",
        "account",
        "storage",
        "client",
        "service",
        "app",
        "admin",
        "root",
        "session",
        "shared",
        "sas",
        "wandb",
        "hf",
        "openai",
        "db",
        "dev",
        "prod",
        "user",
        "write",
        "read",
        "deploy",
        "host",
    }
)
PASS_PREFIXES = frozenset(
    {"db", "smtp", "user", "admin", "root", "mysql", "pg", "redis", "ldap", "ftp", "mail", "proxy", "rabbit", "mq"}
)
# words that look like credential words and are not
NOT_WORDS = frozenset(
    {
        "bypass",
        "compass",
        "passthrough",
        "askpass",
        "oldpwd",
        "tokenizer",
        "tokenizers",
        "tokens",
        "keyboard",
        "monkey",
        "hotkey",
        "turkey",
        "whiskey",
        "donkey",
        "jockey",
        "hockey",
        "author",
        "authors",
        "authority",
        "authored",
        "sessions",
        "secretary",
    }
)
# a last word that makes the name describe a credential (where it is, what it is called) rather than hold it
META_LAST = frozenset(
    {
        "name",
        "names",
        "ref",
        "refs",
        "path",
        "paths",
        "file",
        "files",
        "filename",
        "dir",
        "directory",
        "location",
        "mount",
        "url",
        "uri",
        "endpoint",
        "host",
        "server",
        "domain",
        "issuer",
        "audience",
        "scope",
        "scopes",
        "seconds",
        "timeout",
        "ttl",
        "expiry",
        "expires",
        "expiration",
        "lifetime",
        "length",
        "len",
        "size",
        "count",
        "limit",
        "type",
        "kind",
        "mode",
        "method",
        "scheme",
        "provider",
        "enabled",
        "enable",
        "disabled",
        "required",
        "version",
        "format",
        "algorithm",
        "env",
        "var",
        "field",
        "stdin",
        "prompt",
        "helper",
        "command",
        "cmd",
        "source",
        "from",
        "sock",
        "socket",
        "registry",
        "repo",
        "repository",
        "network",
        "subnet",
        "ip",
        "cidr",
        "zone",
        "region",
        "affinity",
        "config",
        "policy",
        "header",
        "rotation",
        "store",
        "backend",
    }
)
# tokens of a Hugging Face tokenizer or generation config, not credentials
BENIGN_TOKEN_OWNERS = frozenset(
    {
        "pad",
        "eos",
        "bos",
        "unk",
        "sep",
        "cls",
        "mask",
        "max",
        "min",
        "num",
        "start",
        "end",
        "image",
        "special",
        "chat",
        "stop",
        "decoder",
        "vision",
        "audio",
        "video",
        "per",
        "first",
        "last",
        "new",
    }
)
# keys of data, not of locks: `text_key`, `sort_key`, `metric_for_best_model`'s friends in ML configs
BENIGN_KEY_OWNERS = frozenset(
    {
        "text",
        "label",
        "labels",
        "sort",
        "cache",
        "primary",
        "partition",
        "group",
        "dict",
        "column",
        "image",
        "input",
        "output",
        "target",
        "prompt",
        "response",
        "data",
        "dataset",
        "hash",
        "shard",
        "sample",
        "metric",
        "monitor",
        "join",
        "lookup",
        "map",
        "foreign",
        "unique",
        "hot",
        "short",
        "sequence",
        "feature",
        "audio",
        "video",
        "query",
        "value",
        "node",
        "topology",
        "selector",
        "match",
    }
)
# words before `_id` that make the id a credential
ID_OWNERS = frozenset({"key", "secret", "session", "accesskey", "privatekey", "apikey"})
# single-word names that are credentials only when the value looks like a secret
AMBIGUOUS = frozenset({"key", "keys", "signature", "nonce", "salt", "hmac", "code"})

_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SPLIT = re.compile(r"[^A-Za-z0-9]+")


def words(name: str) -> list[str]:
    """`AWS_SECRET_ACCESS_KEY`, `hf-token`, `apiKey`, `client.secret` → lower-case words."""
    out: list[str] = []
    for part in _SPLIT.split(name):
        out.extend(w.lower() for w in _CAMEL.findall(part))
    return out


def _credential_word(w: str) -> bool:
    if w in NOT_WORDS:
        return False
    if any(p in w for p in STRONG_PARTS):
        return True
    if w in WORDS:
        return True
    if w.endswith("token") and len(w) > 5:  # hftoken, accesstoken, ghtoken
        return True
    if w.endswith("auth") and len(w) > 4:  # oauth, basicauth, proxyauth
        return True
    for tail, prefixes in (("key", KEY_PREFIXES), ("pass", PASS_PREFIXES), ("pwd", PASS_PREFIXES | KEY_PREFIXES)):
        if w.endswith(tail) and w[: -len(tail)] in prefixes:
            return True
    return False


@lru_cache(maxsize=8192)
def _judge(name: str) -> str:
    """"secret", "ambiguous" or "" for a bare name."""
    ws = words(name)
    if not ws:
        return ""
    last = ws[-1]
    if len(ws) == 1:
        if last in ("pwd", "oldpwd"):  # the shell's working directory
            return ""
        if last in AMBIGUOUS:
            return "ambiguous"
        return "secret" if _credential_word(last) else ""
    if last in META_LAST:
        return ""
    if last == "id":
        return "secret" if any(w in ID_OWNERS for w in ws[:-1]) else ""
    if last == "token" and ws[-2] in BENIGN_TOKEN_OWNERS:
        return ""
    if last in ("key", "keys") and ws[-2] in BENIGN_KEY_OWNERS:
        return ""
    if any(_credential_word(w) for w in ws):
        return "secret"
    if any(a == "connection" and b in ("string", "str") for a, b in itertools.pairwise(ws)):
        return "secret"
    if "key" in ws or "keys" in ws:  # SOME_KEY, keyValue: a key of something, in a name that says so
        return "secret"
    if last in AMBIGUOUS:
        return "ambiguous"
    return ""


MAX_NAME = 256  # longer is not a name: never judged (which also bounds the word split below)


def _bare(name: str) -> str:
    bare = name.strip().lstrip("-$").strip("\"'{}")
    return bare if len(bare) <= MAX_NAME else ""


def sensitive_name(name: str) -> bool:
    """True when a variable, key, flag or header named `name` holds a credential, whatever its value."""
    return _judge(_bare(name)) == "secret"


def ambiguous_name(name: str) -> bool:
    """True when `name` holds a credential only if its value looks like one (`key`, `signature`)."""
    return _judge(_bare(name)) == "ambiguous"


def credential_position(name: str, value: str) -> bool:
    """Should `value`, found under `name`, be redacted?"""
    j = _judge(_bare(name))
    return j == "secret" or (j == "ambiguous" and looks_secret(value))


def entropy(s: str) -> float:
    """Shannon entropy in bits per character."""
    if not s:
        return 0.0
    counts: dict[str, int] = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_NOT_SECRET_SHAPE = re2.compile(r"(?:[/~.]|[a-z][a-z0-9+.-]*://).*|[\w-]+(?:\.[\w-]+)+|\d+(?:\.\d+)*")


_PATH_PART = re2.compile(r"\d+|[A-Z]?[a-z]+|[A-Z]+|[A-Za-z0-9]{1,3}")
_PATH_SEPARATORS = re2.compile(r"[/._\-]+")


_PATTERN_CHARS = frozenset("[](){}*?^$|\\")


def _wordy_path(v: str) -> bool:
    """A relative path of words and numbers (`run/checkpoint-100/optimizer.pt`, an S3 key), not a base64 run."""
    return "/" in v and all(_PATH_PART.fullmatch(p) for p in _PATH_SEPARATORS.split(v) if p)


def looks_secret(value: str) -> bool:
    """A high-entropy token: long, no spaces, letters and digits mixed, not a path, URL, host name or version."""
    v = value.strip("\"'")
    if len(v) < 12 or len(v) > 8192 or any(c.isspace() for c in v):
        return False
    if _NOT_SECRET_SHAPE.fullmatch(v) or _wordy_path(v) or any(c in _PATTERN_CHARS for c in v):
        return False  # a path, a host, a version, a pattern (`[A-Za-z0-9]([-A-Za-z0-9_./]*)?`)
    classes = sum((any(c.islower() for c in v), any(c.isupper() for c in v), any(c.isdigit() for c in v)))
    if classes < 2 or not any(c.isdigit() for c in v):
        return False
    return entropy(v) >= 3.0

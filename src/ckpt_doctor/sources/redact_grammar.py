"""Credentials a command's grammar gives, not a name: a table of common CLIs' password flags and positional forms.

`sshpass -p X`, `mysql -pX`, `7z x -pX`, `unzip -P X`, `smbclient -U user%X`, `lftp -u user,X`,
`curl -u user:X`, `openssl … -pass pass:X`, `echo X | sudo -S …`, `mc alias set NAME URL KEY SECRET`,
`rclone config create NAME TYPE secret_access_key X`, `htpasswd -b FILE USER X`: the value is a credential
because of where it stands in the tool's command line, whatever it looks like. Each tool's grammar is data
(`CLI`, below), read by one function (`grammar_spans`) over the words of one simple command: a container's
`command` + `args` (lists), or the words `redact_shapes.split_command` cuts out of a script line, an event
message or a log line.

Where the tool must stand: a tool whose credentials come after a flag (`-p`, `-U`) is recognised anywhere in
the command's words (an event quotes `…: mysql -uroot -pX`); a tool whose credentials are positional, paired
or read from stdin must be the command itself (its first word, after `sudo`, `env`, `VAR=value` and the like).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ckpt_doctor.sources.redact_names import credential_position


@dataclass(frozen=True)
class Positional:
    """After the subcommand words `sub` (shell-style patterns), the positional arguments at `at` are credentials;
    `needs`: short-flag letters that must all be given for this form (`htpasswd -b`)."""

    sub: tuple[str, ...]
    at: tuple[int, ...]
    needs: str = ""


@dataclass(frozen=True)
class Pairs:
    """After the subcommand words `sub` and `skip` more positionals, `KEY VALUE` pairs: VALUE is a credential when
    KEY names one (`rclone config create NAME TYPE secret_access_key X`)."""

    sub: tuple[str, ...]
    skip: int = 0


@dataclass(frozen=True)
class Grammar:
    # flags whose argument is the credential: `-p X`, `-pX` (one-letter flags), `--password X`, `--password=X`
    value: frozenset[str] = frozenset()
    # flags whose credential is only glued to them: `mysql -pX` / `--password=X` (a bare `-p` prompts)
    glued: frozenset[str] = frozenset()
    # flags whose argument is `user<SEP>secret`, or `<SEP>secret` (openssl's `pass:`): the part after SEP
    split: Mapping[str, str] = field(default_factory=dict)
    positional: tuple[Positional, ...] = ()
    pairs: tuple[Pairs, ...] = ()
    # flags with which the tool reads a password on stdin ("" : it always does): `echo X | sudo -S …`, `<<< X`
    stdin: frozenset[str] = frozenset()


def _g(
    value: str = "",
    glued: str = "",
    split: Mapping[str, str] | None = None,
    positional: tuple[Positional, ...] = (),
    pairs: tuple[Pairs, ...] = (),
    stdin: str | None = None,
) -> Grammar:
    return Grammar(
        frozenset(value.split()),
        frozenset(glued.split()),
        dict(split or {}),
        positional,
        pairs,
        frozenset(stdin.split() or [""]) if stdin is not None else frozenset(),
    )


_MYSQL = _g(glued="-p --password")
_MONGO = _g(value="-p --password")
_LDAP = _g(value="-w")
_SEVENZIP = _g(glued="-p")
_SMB = _g(split={"-U": "%", "--user": "%"}, value="--password")
_OPENSSL = _g(split={"-pass": "pass:", "-passin": "pass:", "-passout": "pass:", "-password": "pass:"})
_MSSQL = _g(value="-P")
_LOGIN_STDIN = _g(stdin="--password-stdin")

CLI: dict[str, Grammar] = {
    "sshpass": _g(value="-p"),
    **dict.fromkeys(
        ("mysql", "mariadb", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mysqlsh"), _MYSQL
    ),
    **dict.fromkeys(("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport"), _MONGO),
    "redis-cli": _g(value="-a --pass"),
    "redis-server": _g(value="--requirepass --masterauth"),
    **dict.fromkeys(("7z", "7za", "7zr", "7zz", "rar", "unrar"), _SEVENZIP),
    "unzip": _g(value="-P"),
    "zip": _g(value="-P --password"),
    **dict.fromkeys(("smbclient", "smbget", "rpcclient", "smbcacls", "smbcquotas"), _SMB),
    "lftp": _g(split={"-u": ",", "--user": ","}, value="--password"),
    "curl": _g(split={"-u": ":", "--user": ":", "-U": ":", "--proxy-user": ":"}, value="--oauth2-bearer"),
    "wget": _g(value="--password --http-password --ftp-password --proxy-password"),
    "openssl": _OPENSSL,
    "keytool": _g(value="-storepass -keypass -srcstorepass -deststorepass -srckeypass -destkeypass -new"),
    "htpasswd": _g(positional=(Positional((), (1,), "nb"), Positional((), (2,), "b"))),
    **dict.fromkeys(("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldapwhoami", "ldapcompare"), _LDAP),
    "ldappasswd": _g(value="-w -s -a"),
    **dict.fromkeys(("sqlcmd", "bcp", "osql"), _MSSQL),
    "ipmitool": _g(value="-P"),
    **dict.fromkeys(("mosquitto_pub", "mosquitto_sub"), _g(value="-P --pw")),
    "twine": _g(value="-p --password"),
    "ssh-keygen": _g(value="-N -P"),
    "gpg": _g(value="--passphrase"),
    "influx": _g(value="-password --password"),
    "sudo": _g(stdin="-S --stdin"),
    "passwd": _g(stdin="--stdin"),
    "chpasswd": _g(stdin=""),
    "kinit": _g(stdin=""),
    **dict.fromkeys(("docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "crane"), _LOGIN_STDIN),
    "mc": _g(
        positional=(
            Positional(("alias", "set"), (2, 3)),
            Positional(("config", "host", "add"), (2, 3)),
        )
    ),
    "rclone": _g(pairs=(Pairs(("config", "create"), 2), Pairs(("config", "update"), 1))),
    "poetry": _g(
        positional=(
            Positional(("config", "http-basic.*"), (1,)),
            Positional(("config", "pypi-token.*"), (0,)),
        )
    ),
}
TOOLS = frozenset(CLI)

# words that may stand before the command itself (`sudo -E env FOO=bar exec nohup sshpass …`)
WRAPPERS = frozenset({"sudo", "exec", "env", "command", "time", "nohup", "nice", "ionice", "!", "then", "do", "else"})
ECHO = frozenset({"echo", "printf"})
HERESTRING = "<<<"

Hit = int | tuple[int, int, int]  # a word's index, or (index, start, end) for part of one
Harmless = Callable[[bytes], bool]


def tool_name(word: bytes) -> str:
    """The tool a command word names: its base name, lower case (`/usr/bin/7z` → `7z`)."""
    return word.rsplit(b"/", 1)[-1].lower().decode("latin-1")


def command_start(words: list[bytes]) -> int:
    """The index of the command itself: past `VAR=value` assignments and wrappers (and a wrapper's flags)."""
    k = 0
    while k < len(words):
        w = words[k]
        if b"=" in w and not w.startswith(b"-"):
            k += 1
        elif tool_name(w) in WRAPPERS and tool_name(w) not in CLI:
            k += 1
            while k < len(words) and words[k].startswith(b"-"):
                k += 1  # env -i, nice -n 5 (its value is skipped as a command would be: rare, harmless)
        elif tool_name(w) == "sudo" and k + 1 < len(words) and words[k + 1].startswith(b"-"):
            # sudo with flags: the command is after them (sudo -u trainer sshpass …); -S makes sudo the reader
            j = k + 1
            while j < len(words) and words[j].startswith(b"-"):
                j += 2 if words[j] in (b"-u", b"-g", b"-C", b"-D", b"-h", b"-p", b"-r", b"-t", b"-U") else 1
            if any(words[i] in (b"-S", b"--stdin") for i in range(k + 1, min(j, len(words)))):
                return k
            k = j
        elif tool_name(w) == "sudo":
            k += 1
        else:
            return k
    return k


def find_tool(words: list[bytes]) -> tuple[int, Grammar, bool] | None:
    """Where the tool whose grammar applies stands, its grammar, and whether it is the command itself."""
    start = command_start(words)
    if start < len(words) and tool_name(words[start]) in CLI:
        return start, CLI[tool_name(words[start])], True
    for i, w in enumerate(words):
        g = CLI.get(tool_name(w))
        if g is not None and (g.value or g.glued or g.split):
            return i, g, False  # mid-sentence: only its flags are trusted
    return None


def _after(value: bytes, sep: str) -> int | None:
    at = value.find(sep.encode("latin-1"))
    return None if at < 0 else at + len(sep)


def grammar_spans(words: list[bytes], harmless: Harmless) -> tuple[list[Hit], bool]:
    """Which words of one simple command are credentials by its tool's grammar; and whether the tool reads a
    password on stdin (the caller redacts what an `echo` pipes into it). `harmless(bytes)` says what never is."""
    found = find_tool(words)
    if found is None:
        return [], False
    at, g, is_command = found
    ok = harmless  # placeholders, `$VAR`, booleans
    out: list[Hit] = []
    positional: list[int] = []
    shorts = ""
    reads_stdin = is_command and "" in g.stdin
    j = at + 1
    while j < len(words):
        w = words[j]
        if w == HERESTRING.encode() and j + 1 < len(words):
            if is_command and g.stdin and not ok(words[j + 1]):
                out.append(j + 1)
            j += 2
            continue
        if not w.startswith(b"-") or w == b"-":
            positional.append(j)
            j += 1
            continue
        flag, eq, val = w.partition(b"=")
        name = flag.decode("latin-1")
        if is_command and name in g.stdin:
            reads_stdin = True
        if eq and (name in g.value or name in g.glued):
            if not ok(val):
                out.append((j, len(flag) + 1, len(w)))
            j += 1
            continue
        if eq and name in g.split:
            cut = _after(val, g.split[name])
            if cut is not None and not ok(val[cut:]):
                out.append((j, len(flag) + 1 + cut, len(w)))
            j += 1
            continue
        nxt = words[j + 1] if j + 1 < len(words) else None
        if name in g.value and not eq:
            if nxt is not None and not ok(nxt):
                out.append(j + 1)
            j += 2
            continue
        if name in g.split and not eq:
            if nxt is not None:
                cut = _after(nxt, g.split[name])
                if cut is not None and not ok(nxt[cut:]):
                    out.append((j + 1, cut, len(nxt)))
            j += 2
            continue
        short = name[:2]
        if not name.startswith("--") and len(name) > 2:
            if short in g.value or short in g.glued:  # -pSECRET
                if not ok(w[2:]):
                    out.append((j, 2, len(w)))
                j += 1
                continue
            if short in g.split:  # -Uuser%SECRET
                cut = _after(w[2:], g.split[short])
                if cut is not None and not ok(w[2 + cut :]):
                    out.append((j, 2 + cut, len(w)))
                j += 1
                continue
        if not name.startswith("--"):
            shorts += name[1:]
        j += 1
    if is_command:
        out += _positional(words, positional, g, shorts, ok)
    return out, reads_stdin


def _positional(words: list[bytes], positional: list[int], g: Grammar, shorts: str, ok: Harmless) -> list[Hit]:
    out: list[Hit] = []
    texts = [words[i].decode("latin-1") for i in positional]
    for form in g.positional:
        n = len(form.sub)
        if not all(c in shorts for c in form.needs) or len(texts) < n:
            continue
        if not all(fnmatch.fnmatchcase(t.lower(), s) for t, s in zip(texts[:n], form.sub, strict=False)):
            continue
        for k in form.at:
            if n + k < len(positional) and not ok(words[positional[n + k]]):
                out.append(positional[n + k])
        return out
    for pairs in g.pairs:
        n = len(pairs.sub)
        if len(texts) < n or [t.lower() for t in texts[:n]] != list(pairs.sub):
            continue
        rest = positional[n + pairs.skip :]
        for a, b in zip(rest[::2], rest[1::2], strict=False):
            key, value = words[a].decode("latin-1"), words[b]
            if credential_position(key, value.decode("latin-1")) and not ok(value):
                out.append(b)
        return out
    return out


def echoed(words: list[bytes], harmless: Harmless) -> list[int]:
    """The words an `echo`/`printf` prints (into a pipe that a password reader takes): not its flags or format."""
    if not words or tool_name(words[0]) not in ECHO:
        return []
    skip_format = tool_name(words[0]) == "printf" and len(words) > 2
    out = []
    for i, w in enumerate(words[1:], 1):
        if w.startswith(b"-") or (skip_format and i == 1) or harmless(w):
            continue
        out.append(i)
    return out

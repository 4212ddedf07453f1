"""The one redactor for everything that leaves ckpt-doctor: bundles, every output format, reports, exports, errors.

Public API (other faces call only this):

- `Redactor(extra_patterns=(), enabled=True)`: `.text(str)`, `.bytes(bytes)`, `.obj(json_value)` return redacted
  copies; `.snapshot(snap)` redacts a whole Snapshot in place (what `collect` writes); `.count` / `.counts` say how
  many replacements of each kind were made; `.learn(obj)` remembers the credentials an object holds by name, so that
  they are also replaced wherever they are repeated in free text (a log line that echoes `$DB_PASSWORD`).
- `redact_text(s)`: one string through a default redactor (error lines, notes).
- `redact_diagnosis(diag)`: a Diagnosis as it leaves, in place: evidence, details, reasons, notes (see
  redact_findings); every renderer (text, json, markdown, sarif, junit), the app's export and `report` print it.
- `RedactingStream(stream)`: a text stream whose every line is redacted (the CLI wraps stderr in it).

How it decides, in order (each replacement is `<redacted:KIND>` and counted):

1. **by name** (objects): an env var `{name, value}`, a map key, a flag followed by its value in an args list, whose
   name reads as a credential (`redact_names`: by word, not by a list of variables) has its value replaced whatever
   it looks like; a `Secret`'s data always; the `*_id` fields of an object that also holds a secret field;
2. **by shape and position** (every string, every log window: `redact_shapes`): key blocks, token formats, URLs
   with userinfo, header lines, netrc, login commands, credential flags and assignments, credential JSON, and the
   base64 and %-encoded forms of all of these;
3. **known values**: a credential found by name, repeated anywhere in later text (log lines, event messages).

All patterns are RE2 (linear time). `--redact-pattern` adds RE2 patterns of the user's: the first group when the
pattern has one, else the whole match.
"""

from __future__ import annotations

import io
import itertools
import json
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

import re2

from ckpt_doctor.errors import UsageError
from ckpt_doctor.snapshot import Gap, ListingSource, LogRef, Snapshot
from ckpt_doctor.sources.redact_grammar import TOOLS, tool_name
from ckpt_doctor.sources.redact_names import ambiguous_name, credential_position, looks_secret, sensitive_name
from ckpt_doctor.sources.redact_python import python_spans
from ckpt_doctor.sources.redact_shapes import MARK as _BMARK
from ckpt_doctor.sources.redact_shapes import (
    SHAPES,
    TRIGGERS,
    Context,
    Shape,
    command_spans,
    harmless,
    triggered,
    wrapped_end,
)

if TYPE_CHECKING:
    from ckpt_doctor.engine.walk import Diagnosis

__all__ = [
    "MARK",
    "RedactingStream",
    "Redactor",
    "ambiguous_name",
    "marker",
    "redact_diagnosis",
    "redact_svg",
    "redact_text",
    "sensitive_name",
]

MARK = "<redacted"
MIN_KNOWN = 8  # shorter credentials are redacted where they stand, not searched for everywhere
UNWRAPPED = frozenset({"private-key", "next-line", "xml", "pgpass"})  # kinds whose end is never a wrapped line's


_KNOWN_OPTIONS = re2.Options()
_KNOWN_OPTIONS.encoding = re2.Options.Encoding.LATIN1
_KNOWN_OPTIONS.log_errors = False
_KNOWN_OPTIONS.max_mem = 64 << 20


def marker(kind: str) -> str:
    return f"<redacted:{kind}>"


_BTRIGGERS = frozenset(t.encode() for t in TRIGGERS)


def _bmarker(kind: str) -> bytes:
    return b"<redacted:" + kind.encode("ascii") + b">"


def _custom(i: int, pattern: str) -> Shape:
    opts = re2.Options()
    opts.log_errors = False  # RE2 would print the pattern, a secret maybe, on the terminal
    try:
        compiled = re2.compile(pattern.encode("utf-8"), opts)
    except re2.error as e:
        raw = e.args[0] if e.args else b""
        why = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        why = why.split(": ", 1)[0] or "not accepted"  # what follows is the piece of the pattern it choked on
        raise UsageError(
            f"--redact-pattern #{i + 1} is not a valid RE2 pattern: {why} (RE2 has no look-around or "
            "backreferences; the pattern is not repeated: it may hold what it hides)"
        ) from None
    group = 1 if compiled.groups else 0

    def find(data: bytes, ctx: Context) -> Iterator[tuple[int, int]]:
        for m in compiled.finditer(data):
            s, e = m.span(group)
            if s >= 0 and e > s:
                yield s, e

    return Shape("custom", b"", find)


def _learnable(v: str) -> bool:
    """Worth searching for elsewhere: long enough and not a word, path or placeholder."""
    if len(v) < MIN_KNOWN or v.startswith(("/", MARK)) or harmless(v.encode("utf-8", "surrogatepass")):
        return False
    return looks_secret(v) or len(v) >= 12 or any(not c.isalpha() for c in v)


def _is_id_key(k: str) -> bool:
    return len(k) > 2 and (k.endswith(("_id", "_ID", "-id", "Id")) or (k.endswith("ID") and not k.isupper()))


def _file_like(k: str) -> bool:
    """A ConfigMap data key that names a file (`train.py`, `credentials.json`): its content is text, not a value."""
    stem, dot, ext = k.rpartition(".")
    return bool(dot and stem and ext.isalnum() and len(ext) <= 8)


class Redactor:
    """Replaces credentials in strings, bytes, JSON-shaped values and whole Snapshots; counts replacements."""

    def __init__(self, extra_patterns: Iterable[str] = (), enabled: bool = True) -> None:
        self.enabled = enabled
        self.extra: list[Shape] = [_custom(i, p) for i, p in enumerate(extra_patterns)]
        self.counts: Counter[str] = Counter()
        self.known: set[bytes] = set()
        self._known_pattern: Any = None
        self._known_size = 0
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        return sum(self.counts.values())

    def _add(self, kind: str, n: int = 1) -> None:
        with self._lock:
            self.counts[kind] += n

    def _remember(self, value: str) -> None:
        if _learnable(value):
            b = value.encode("utf-8", "surrogatepass")
            with self._lock:
                self.known.add(b)

    # -- text -------------------------------------------------------------------------------------------
    def text(self, s: str) -> str:
        """`s` with every credential replaced."""
        if not self.enabled or not s:
            return s
        data = s.encode("utf-8", "surrogatepass")
        out, n = self._scan(data, 0, True)
        return s if not n else out.decode("utf-8", "surrogatepass")

    def bytes(self, data: bytes) -> bytes:
        """Redact a log (any bytes: invalid UTF-8 passes through unchanged)."""
        if not self.enabled or not data:
            return data
        out, n = self._scan(data, 0, True)
        return out if n else data

    def _scan(self, data: bytes, depth: int, count: bool) -> tuple[bytes, int]:
        ctx = Context(depth, lambda d, dep: self._scan(d, dep, False))
        hit = triggered(data)  # one pass tells which shapes can find anything; replacements only remove
        total = 0
        if not hit and not self.extra and not self.known:
            return data, 0
        for shape in [*self.extra, *(SHAPES[i] for i in sorted(hit))]:
            new, n = self._apply(shape, data, ctx)
            if n:
                total += n
                if count:
                    self._add(shape.kind, n)
                data = new
        if self.known:
            data, n = self._scrub_known(data)
            if n:
                total += n
                if count:
                    self._add("known", n)
        return data, total

    @staticmethod
    def _apply(shape: Shape, data: bytes, ctx: Context) -> tuple[bytes, int]:
        parts: list[bytes] = []
        pos = n = 0
        mark = _bmarker(shape.kind)
        for hit in shape.find(data, ctx):
            s, e = hit[0], hit[1]
            if s < pos or e <= s or data.startswith(_BMARK, s):
                continue
            if len(hit) == 2 and shape.kind not in UNWRAPPED:
                e = wrapped_end(data, s, e)  # a token the line's width cut in two: its rest is on the next line
            parts.append(data[pos:s])
            rep = hit[2] if len(hit) == 3 else mark  # type: ignore[misc]
            lost = data.count(b"\n", s, e) - rep.count(b"\n")
            # a block (a key) keeps its lines: evidence cites line numbers of the log as written
            parts.append(rep + b"\n" * lost if lost > 0 else rep)
            pos = e
            n += 1
        if not n:
            return data, 0
        parts.append(data[pos:])
        return b"".join(parts), n

    def _known_rx(self) -> Any:
        """One RE2 alternation of every known value, longest first (rebuilt when a value is learned): one pass over
        a text finds them all, however many were learned."""
        with self._lock:
            if self._known_pattern is None or self._known_size != len(self.known):
                alts = b"|".join(re2.escape(k) for k in sorted(self.known, key=len, reverse=True))
                self._known_pattern = re2.compile(alts, _KNOWN_OPTIONS)
                self._known_size = len(self.known)
            return self._known_pattern

    def _scrub_known(self, data: bytes) -> tuple[bytes, int]:
        parts: list[bytes] = []
        pos = n = 0
        for m in self._known_rx().finditer(data):
            s, e = m.span()
            parts += [data[pos:s], _bmarker("known") + b"\n" * data.count(b"\n", s, e)]
            pos = e
            n += 1
        if not n:
            return data, 0
        parts.append(data[pos:])
        return b"".join(parts), n

    # -- objects ----------------------------------------------------------------------------------------
    def obj(self, value: Any) -> Any:
        """A redacted copy of a JSON-shaped value (a Kubernetes object, a list, a string)."""
        if not self.enabled:
            return value
        return self._value(value, None, None)

    def learn(self, value: Any) -> None:
        """Remember the credentials `value` holds by name (no copy is made): they are replaced in later text."""
        if self.enabled:
            self._learn(value, None, None, 0)

    def _by_name(self, kind: str, v: str) -> str:
        self._remember(v)
        self._add(kind)
        return marker(kind)

    def _value(self, v: Any, key: str | None, parent: str | None) -> Any:
        if isinstance(v, dict):
            return self._dict(v, key)
        if isinstance(v, list):
            return self._list(v)
        if isinstance(v, str):
            if key is not None and v and credential_position(key, v) and not self._harmless(v):
                return self._by_name("by-name", v)
            return self._string(v)
        return v

    @staticmethod
    def _harmless(v: str) -> bool:
        return harmless(v.encode("utf-8", "surrogatepass"))

    def _dict(self, d: dict[str, Any], key: str | None) -> dict[str, Any]:
        if d.get("kind") == "Secret" and isinstance(d.get("apiVersion"), str):
            d = dict(d)
            for field in ("data", "stringData"):
                if isinstance(d.get(field), dict):
                    d[field] = {k: self._by_name("secret-data", str(v)) for k, v in d[field].items()}
        name = d.get("name")
        env_name = name if isinstance(name, str) and "value" in d else None
        holds_secret = any(isinstance(k, str) and isinstance(v, str) and sensitive_name(k) for k, v in d.items())
        files = key in ("data", "binaryData", "stringData")
        argv = self._argv_secrets(d)
        out: dict[str, Any] = {}
        for k, v in d.items():
            if k in argv:
                out[k] = self._list(v, argv[k])
                continue
            if k == "value" and env_name is not None and isinstance(v, str):
                if v and credential_position(env_name, v) and not self._harmless(v):
                    out[k] = self._by_name("env", v)
                else:
                    out[k] = self._string(v)
                continue
            is_id = holds_secret and isinstance(k, str) and isinstance(v, str) and _is_id_key(k)
            if is_id and v and not self._harmless(v):
                out[k] = self._by_name("credential-json", v)
                continue
            if files and isinstance(k, str) and k.endswith(".py") and isinstance(v, str):
                out[k] = self._python(v)  # Python source: parsed, then read as text
                continue
            kk = k if isinstance(k, str) and not (files and _file_like(k)) else None
            out[k] = self._value(v, kk, key)
        return out

    def _argv_secrets(self, d: dict[str, Any]) -> dict[str, dict[int, tuple[int, int]]]:
        """A container's `command` and `args` are one command line (`command: [sshpass]`, `args: [-p, X, …]`):
        the secrets of each list, judged on the two together."""
        cmd, args = d.get("command"), d.get("args")
        if not (isinstance(cmd, list) and isinstance(args, list) and cmd and args):
            return {}
        found = self._list_secrets(cmd + args)
        n = len(cmd)
        return {
            "command": {i: v for i, v in found.items() if i < n},
            "args": {i - n: v for i, v in found.items() if i >= n} | self._list_secrets(args),
        }

    def _list(self, items: list[Any], secret_at: dict[int, tuple[int, int]] | None = None) -> list[Any]:
        out = [None] * len(items)
        if secret_at is None:
            secret_at = self._list_secrets(items)
        for i, item in enumerate(items):
            hit = secret_at.get(i)
            if hit is None:
                out[i] = self._value(item, None, None)
            elif hit == (0, -1):
                out[i] = self._by_name("secret-flag", item)
            else:
                a, b = hit
                self._remember(item[a:b])
                self._add("secret-flag")
                out[i] = item[:a] + marker("secret-flag") + item[b:]
        return out

    def _list_secrets(self, items: list[Any]) -> dict[int, tuple[int, int]]:
        """Which items of an argument list are secrets: by the command's grammar (a login's credential, `sshpass -p
        X`, `mc alias set … KEY SECRET`), and a flag's value whose name reads as a credential."""
        found: dict[int, tuple[int, int]] = {}
        strs = [i for i, x in enumerate(items) if isinstance(x, str)]
        if len(strs) < 2:
            return found
        words = [x.encode("utf-8", "surrogatepass") if isinstance(x, str) else b"" for x in items]
        if any(w.lower() in _BTRIGGERS or tool_name(w) in TOOLS for w in words):
            for hit in command_spans(words)[0]:
                if isinstance(hit, int):
                    found.setdefault(hit, (0, -1))
                else:
                    idx, a, b = hit
                    w = words[idx]
                    start, end = len(w[:a].decode("utf-8", "replace")), len(w[:b].decode("utf-8", "replace"))
                    found.setdefault(idx, (start, end))
        for i, j in itertools.pairwise(strs):
            flag, nxt = items[i], items[j]
            if i in found or j != i + 1 or not flag.startswith("-") or "=" in flag:
                continue  # `-pSECRET`: the secret is in the flag, not a name
            if not nxt or nxt.startswith(("-", MARK)):
                continue
            if not self._harmless(nxt) and credential_position(flag, nxt):
                found.setdefault(j, (0, -1))
        return found

    def _python_literals(self, src: str) -> list[tuple[int, int]]:
        data = src.encode("utf-8", "surrogatepass")
        return [(a, b) for a, b in python_spans(src) if not harmless(data[a:b])]

    def _python(self, src: str) -> str:
        """Python source with the string literals that hold credentials (by `ast`) replaced, then as text."""
        spans = self._python_literals(src)
        if spans:
            data = src.encode("utf-8", "surrogatepass")
            parts: list[bytes] = []
            pos = 0
            for a, b in spans:
                if a < pos or data.startswith(_BMARK, a):
                    continue
                self._remember(data[a:b].decode("utf-8", "surrogatepass"))
                parts += [data[pos:a], _bmarker("python-call")]
                pos = b
                self._add("python-call")
            src = (b"".join(parts) + data[pos:]).decode("utf-8", "surrogatepass")
        return self.text(src)

    def _string(self, s: str) -> str:
        t = s.strip()
        if len(t) > 1 and t[0] in "{[" and t[-1] in "}]":
            try:
                parsed = json.loads(t)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict | list):
                red = self._value(parsed, None, None)
                return s if red == parsed else json.dumps(red, separators=(",", ":"))
        return self.text(s)

    def _learn(self, v: Any, key: str | None, parent: str | None, depth: int) -> None:
        if depth > 100:
            return
        if isinstance(v, dict):
            if v.get("kind") == "Secret":
                for field in ("data", "stringData"):
                    for x in (v.get(field) or {}).values() if isinstance(v.get(field), dict) else ():
                        self._remember(str(x))
            name = v.get("name")
            if isinstance(name, str) and isinstance(v.get("value"), str) and credential_position(name, v["value"]):
                self._remember(v["value"])
            files = key in ("data", "binaryData", "stringData")
            for k, found in self._argv_secrets(v).items():
                self._learn_found(v[k], found)
            for k, x in v.items():
                if files and isinstance(k, str) and k.endswith(".py") and isinstance(x, str):
                    data = x.encode("utf-8", "surrogatepass")
                    for a, b in self._python_literals(x):
                        self._remember(data[a:b].decode("utf-8", "surrogatepass"))
                elif isinstance(x, str):
                    named = isinstance(k, str) and k != "value" and not (files and _file_like(k))
                    if named and x and credential_position(k, x) and not self._harmless(x):
                        self._remember(x)
                else:
                    self._learn(x, k if isinstance(k, str) else None, key, depth + 1)
        elif isinstance(v, list):
            self._learn_found(v, self._list_secrets(v))
            for x in v:
                if isinstance(x, dict | list):
                    self._learn(x, None, key, depth + 1)

    def _learn_found(self, v: list[Any], found: dict[int, tuple[int, int]]) -> None:
        for i, j in found.items():
            self._remember(v[i] if j == (0, -1) else v[i][j[0] : j[1]])

    # -- a whole snapshot -------------------------------------------------------------------------------
    def snapshot(self, snap: Snapshot) -> Snapshot:
        """Redact every object, log window and metadata string of `snap` in place; returns it."""
        if not self.enabled:
            return snap
        for o in snap.objects:
            self.learn(o.raw)
        for o in snap.objects:
            o.raw = self.obj(o.raw)
        for key, ref in list(snap.logs.items()):
            snap.logs[key] = self.log(ref)
        for key, src in list(snap.checkpoints.items()):
            snap.checkpoints[key] = self.listing(src)
        snap.meta = self.obj(snap.meta)
        # gap reasons quote server and transport errors: they leave the cluster too
        snap.not_collected = [Gap(g.what, self.text(g.reason)) for g in snap.not_collected]
        snap.notes = [self.text(n) for n in snap.notes]
        return snap

    def listing(self, src: ListingSource) -> ListingSource:
        """An in-memory, redacted copy of a checkpoint listing: its text, df and small files (paths may hold what
        a log line may)."""
        from ckpt_doctor.facts.listing import MAX_LISTING_BYTES, MAX_SMALL_FILE

        if src.problem:
            return src
        try:
            text = src.read_text(MAX_LISTING_BYTES)
        except (OSError, ValueError) as e:
            return ListingSource(src.pod, src.container, src.display, problem=f"unreadable: {e}")
        df = src.read_df()
        files = {k: self.bytes(v) for k, v in src.read_files(MAX_SMALL_FILE).items()}
        return ListingSource(src.pod, src.container, src.display, text=self.text(text),
                             df_text=self.text(df) if df is not None else None, files=files)  # fmt: skip

    def log(self, ref: LogRef) -> LogRef:
        """An in-memory, redacted copy of `ref`, holding exactly the bytes a bundle stores for it."""
        from ckpt_doctor.sources.bundle_write import log_bytes  # one definition of "what of a log we keep"

        content = self.bytes(log_bytes(ref))
        return LogRef(ref.pod, ref.container, ref.previous, head=content, size=len(content), namespace=ref.namespace)


def redact_text(s: str) -> str:
    """One string through the default redactor (error lines, notes: every way out)."""
    return Redactor().text(s)


def redact_diagnosis(diag: Diagnosis, redactor: Redactor | None = None) -> Diagnosis:
    """The findings document as it leaves, redacted in place (idempotent, cheap: only what is quoted)."""
    from ckpt_doctor.sources.redact_findings import redact_diagnosis as _impl

    return _impl(diag, redactor or Redactor())


_SVG_TEXT = re2.compile(r"(<text\b[^>]*>)([^<]*)(</text>)")


_SVG_LINE = re2.compile(r'clip-path="url\(#[^)"]*-line-(\d+)\)"')  # the runs of one screen line share it
MASK = "•"  # what stands, in a screenshot, for the characters of a credential that spans styled runs


def redact_svg(svg: str, diag: Diagnosis | None = None) -> str:
    """A screenshot (Rich/Textual SVG) through the redactor.

    Each text run is unescaped, redacted and escaped again; then each screen line, its runs joined, is redacted
    as a whole, and the characters of what that finds are masked (•) in the runs they stand in: a credential
    that the screen drew in two styles (a search hit, the cursor's column, a highlighted word) is two runs, of
    which neither alone looks like one. With `diag`, the credentials its objects hold by name are replaced
    wherever they show (an object's YAML on screen puts the name and the value in different runs).
    """
    import html

    from ckpt_doctor.sources.redact_findings import learn_from, scope_objects

    r = Redactor()
    if diag is not None:
        for o in scope_objects(diag):
            learn_from(o, r)

    def shown(raw: str) -> str:
        return html.unescape(raw).replace("\xa0", " ")

    def escaped(text: str) -> str:
        return html.escape(text, quote=False).replace(" ", "&#160;")

    runs: list[list[str]] = []  # [what comes before, the whole element, its tags, its text as shown, redacted]
    lines: list[str | None] = []  # each run's screen line (None: not part of one)
    pos = 0
    for m in _SVG_TEXT.finditer(svg):
        text = shown(m.group(2))
        runs.append([svg[pos : m.start()], m.group(0), m.group(1), m.group(3), text, r.text(text)])
        line = _SVG_LINE.search(m.group(1))
        lines.append(line.group(1) if line else None)
        pos = m.end()
    for key, group in itertools.groupby(range(len(runs)), key=lambda i: lines[i]):
        idx = list(group)
        if key is not None and len(idx) > 1:
            _mask_line([runs[i] for i in idx], r)
    out: list[str] = []
    for before, whole, open_tag, close_tag, text, red in runs:
        out.append(before)
        out.append(whole if red == text else open_tag + escaped(red) + close_tag)
    out.append(svg[pos:])
    return "".join(out)


def _mask_line(runs: list[list[str]], r: Redactor) -> None:
    """Mask, in a screen line's runs (their redacted texts, index 5), what the redactor finds in the whole line."""
    import difflib

    texts = [run[5] for run in runs]
    joined = "".join(texts)
    red = r.text(joined)
    if red == joined:
        return
    ops = difflib.SequenceMatcher(None, joined, red, autojunk=False).get_opcodes()
    masked = list(joined)
    for k, (tag, i1, i2, _j1, _j2) in enumerate(ops):
        # what changed; and a few characters the marker happened to share with the credential, between two changes
        inside = 0 < k < len(ops) - 1 and i2 - i1 < 4
        if tag != "equal" or inside:
            masked[i1:i2] = MASK * (i2 - i1)
    at = 0
    for run, text in zip(runs, texts, strict=True):
        run[5] = "".join(masked[at : at + len(text)])
        at += len(text)


class RedactingStream(io.TextIOBase):
    """A text stream that passes every line through the redactor before the stream it wraps sees it.

    Complete lines (and carriage-return updates of a progress line) are redacted and written at once; a partial
    line waits for its end, or for `flush()`.
    """

    def __init__(self, stream: TextIO, redactor: Redactor | None = None) -> None:
        super().__init__()
        self._stream = stream
        self._r = redactor or Redactor()
        self._buf = ""
        self._lock = threading.Lock()

    def write(self, s: str) -> int:
        with self._lock:
            self._buf += s
            cut = max(self._buf.rfind("\n"), self._buf.rfind("\r"))
            if cut >= 0:
                done, self._buf = self._buf[: cut + 1], self._buf[cut + 1 :]
                self._stream.write(self._r.text(done))
        return len(s)

    def flush(self) -> None:
        with self._lock:
            if self._buf:
                self._stream.write(self._r.text(self._buf))
                self._buf = ""
        self._stream.flush()

    def isatty(self) -> bool:
        return bool(getattr(self._stream, "isatty", lambda: False)())

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", "utf-8")

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

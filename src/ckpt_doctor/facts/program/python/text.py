"""The text fallback (syntax errors, Python 2, templates): conservative, low confidence."""

from __future__ import annotations

import ast
import bisect
import re
from collections import defaultdict

from ckpt_doctor.facts.program.python.facts import (
    Call,
    Discovery,
    PyFacts,
    Site,
    StateIO,
    Value,
)
from ckpt_doctor.facts.program.python.parts import _component, _content, _missing
from ckpt_doctor.facts.program.python.tree import (
    _SPLIT_LINES,
)
from ckpt_doctor.facts.program.python.vocabulary import (
    _CKPT_WORDS,
    _SKIP_PRETRAINED,
)

_T_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+([\w, \t()]+)|import[ \t]+([\w., \t]+))", re.M)
_T_SELECT = re.compile(r"\b(sorted|max|min|natsorted)\s*\(")
_T_SORT = re.compile(r"\b(\w+)\.sort\(([^)\n]*)\)")
_T_LISTING = re.compile(r"\b(?:glob|iglob|listdir|scandir|iterdir|rglob)\s*\(")
_T_ENV = re.compile(r"""os\.(?:environ\[\s*|environ\.get\(\s*|getenv\(\s*)["'](\w+)["']""")
_T_PRINT = re.compile(
    r"""\b(?:print|info|warning|warn|error|debug)\s*\(?\s*[fFrRbBuU]{0,2}(["'])((?:\\.|(?!\1).){1,300}?)\1"""
)
_T_CALL = re.compile(
    r"\b(\w*TrainingArguments|SFTConfig|GRPOConfig|DPOConfig|\w*Trainer|ModelCheckpoint|sft|get_last_checkpoint)\s*\("
    r"|\.(train|fit)\s*\("
)
_T_IO: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"\btorch\.save\s*\("), "save", "torch.save"),
    (re.compile(r"\btorch\.load\s*\("), "load", "torch.load"),
    (re.compile(r"\.save_pretrained\s*\("), "save", "save_pretrained"),
    (re.compile(r"\.save_state\s*\("), "save", "accelerate.save_state"),
    (re.compile(r"\.load_state\s*\("), "load", "accelerate.load_state"),
    (re.compile(r"\.save_checkpoint\s*\("), "save", "deepspeed.save_checkpoint"),
    (re.compile(r"\.load_checkpoint\s*\("), "load", "deepspeed.load_checkpoint"),
    (re.compile(r"\bdcp\.save\s*\("), "save", "dcp.save"),
    (re.compile(r"\bdcp\.load\s*\("), "load", "dcp.load"),
    (re.compile(r"\.load_state_dict\s*\("), "load", "load_state_dict"),
    (re.compile(r"\.save_model\s*\("), "save", "trainer.save_model"),
)


class _Text:
    def __init__(self, source: str) -> None:
        self.src = source
        self.starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", source)]
        self.lines = _SPLIT_LINES.split(source)

    def line_no(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos)

    def site(self, pos: int) -> Site:
        n = self.line_no(pos)
        return Site(n, self.lines[n - 1].strip()[:300] if 0 < n <= len(self.lines) else "")

    def balanced(self, open_pos: int, limit: int = 3000) -> str:
        """The text inside the parenthesis opening at `open_pos` (bounded)."""
        depth = 0
        quote = ""
        i = open_pos
        end = min(len(self.src), open_pos + limit)
        while i < end:
            ch = self.src[i]
            if quote:
                if ch == "\\":
                    i += 2
                    continue
                if ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
                if depth == 0:
                    return self.src[open_pos + 1 : i]
            elif ch == "\n" and depth == 0:
                break
            i += 1
        return self.src[open_pos + 1 : end]


def _split_top(args: str) -> list[str]:
    out, depth, quote, cur = [], 0, "", []
    i = 0
    while i < len(args):
        ch = args[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and i + 1 < len(args):
                cur.append(args[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            cur.append(ch)
        elif ch in "([{":
            depth += 1
            cur.append(ch)
        elif ch in ")]}":
            depth -= 1
            cur.append(ch)
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _literal(text: str) -> Value:
    try:
        v = ast.literal_eval(text.strip())
        if isinstance(v, str | int | float | bool) or v is None:
            return Value(v, True, text.strip()[:400])
    except Exception:
        pass
    if text.strip() in ("true", "false"):
        return Value(text.strip() == "true", True, text.strip())
    return Value(None, False, text.strip()[:400], "expr")


def _read_text(source: str, error: str | None) -> PyFacts:
    out = PyFacts(parsed=False, error=error, confidence="low")
    try:
        _fill_text(out, source)
    except Exception as e:  # the fallback must never raise either
        out.error = f"{error}; text search failed ({type(e).__name__})"
    return out


_T_MAX_MATCHES = 2000  # per construct: a huge unparseable file is searched, not exhausted
_T_INDEXED = re.compile(r"\b(\w+)\s*\[\s*(?:-?\d+|:)")
_T_ASSIGN = re.compile(r"^[ \t]*(\w+)[ \t]*=(?!=)[ \t]*([^\n]*)", re.M)


def _fill_text(out: PyFacts, source: str) -> None:
    t = _Text(source)
    for m in _T_IMPORT.finditer(source):
        if m.group(1):
            mod = m.group(1)
            parts = mod.split(".")
            out.imports.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            for name in re.split(r"[\s,()]+", m.group(2)):
                if name and name != "as" and re.fullmatch(r"\w+", name):
                    out.imports.add(f"{mod}.{name}")
        else:
            for mod in re.split(r"\s*,\s*", m.group(3).strip()):
                mod = mod.split(" as ")[0].strip()
                if mod:
                    parts = mod.split(".")
                    out.imports.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    indexed = {m.group(1) for m in _T_INDEXED.finditer(source)}  # names used as xs[-1], xs[0], xs[:…]
    assigned: dict[str, list[tuple[int, str]]] = defaultdict(list)  # name -> (offset, right-hand side)
    for m in _T_ASSIGN.finditer(source):
        assigned[m.group(1)].append((m.start(), m.group(2)[:400]))
    # discovery
    for n, m in enumerate(_T_SELECT.finditer(source)):
        if n >= _T_MAX_MATCHES:
            break
        inner = t.balanced(m.end() - 1, 800)
        if not _T_LISTING.search(inner) and m.group(1) != "natsorted":
            continue
        line_text = t.site(m.start()).text
        close = m.end() + len(inner)
        after = source[close : close + 8]
        if m.group(1) in ("sorted", "natsorted") and not re.match(r"\s*\)*\s*\[", after):
            am = re.search(r"(\w+)\s*=\s*$", source[max(0, m.start() - 80) : m.start()])
            if not am or am.group(1) not in indexed:
                continue
        if not (_CKPT_WORDS.search(inner) or _CKPT_WORDS.search(line_text) or re.search(r"load|resume", line_text)):
            continue
        top = _split_top(inner)
        key = next((a.split("=", 1)[1] for a in top if re.match(r"key\s*=", a)), None)
        if m.group(1) == "natsorted":
            kind = "numeric"
        elif key is None:
            kind = "lexical"
        elif re.search(r"getmtime|getctime|\bstat\b|st_mtime", key):
            kind = "mtime"
        elif re.search(r"\bint\s*\(|\bfloat\s*\(|\blen\b|natsort|natural", key):
            kind = "numeric"
        else:
            kind = "unknown"
        pm = re.search(r"""["']([^"']*[*?][^"']*)["']""", inner)
        pattern = pm.group(1).rsplit("/", 1)[-1] if pm else None
        out.discovery.append(Discovery(kind, t.site(m.start()), pattern, None, False, m.group(1)))
    for n, m in enumerate(_T_SORT.finditer(source)):
        if n >= _T_MAX_MATCHES:
            break
        name = m.group(1)
        if name not in indexed:
            continue
        binds = [rhs for pos, rhs in assigned.get(name, ()) if pos < m.start()]
        rhs = binds[-1] if binds else ""
        if not _T_LISTING.search(rhs) or not (_CKPT_WORDS.search(rhs) or _CKPT_WORDS.search(name)):
            continue
        key = re.search(r"key\s*=(.*)", m.group(2))
        kind = "lexical"
        if key:
            k = key.group(1)
            if re.search(r"getmtime|getctime|stat", k):
                kind = "mtime"
            elif re.search(r"\bint\s*\(|\blen\b|natsort", k):
                kind = "numeric"
            else:
                kind = "unknown"
        out.discovery.append(Discovery(kind, t.site(m.start()), None, None, False, "sort"))
    for n, m in enumerate(re.finditer(r"\bget_last_checkpoint\s*\(", source)):
        if n >= _T_MAX_MATCHES:
            break
        out.discovery.append(
            Discovery("hf-get-last", t.site(m.start()), "checkpoint-*", None, False, "get_last_checkpoint")
        )
    # io
    for rx, op, api in _T_IO:
        for n, m in enumerate(rx.finditer(source)):
            if n >= _T_MAX_MATCHES:
                break
            inner = t.balanced(m.end() - 1, 800)
            content, keys, parts = "unknown", (), ()
            if api == "torch.save":
                arg0 = (_split_top(inner) or [""])[0]
                if arg0.startswith("{"):
                    keys = tuple(re.findall(r"""["'](\w+)["']\s*:""", arg0))
                    ps = {c for k in keys if (c := _component(k))}
                    content, parts = _content(ps), tuple(sorted(ps))
                elif re.match(r"[\w.]+\.state_dict\(\)$", arg0):
                    c = _component(arg0.rsplit(".state_dict", 1)[0]) or "model"
                    content, parts = _content({c}), (c,)
            elif api.startswith(("accelerate.", "deepspeed.")):
                content, parts = "full", ("model", "optimizer", "scheduler")
            elif api in ("save_pretrained", "trainer.save_model"):
                if api == "save_pretrained" and _SKIP_PRETRAINED.search(source[max(0, m.start() - 40) : m.start()]):
                    continue
                content, parts = "weights", ("model",)
            elif api == "load_state_dict":
                recv = re.search(r"([\w.]+)\s*$", source[max(0, m.start() - 60) : m.start()])
                c = (_component(recv.group(1)) if recv else None) or "model"
                content, parts = _content({c}), (c,)
            out.io.append(StateIO(op, api, content, keys, t.site(m.start()), parts, _missing(parts, content)))
    out.io.sort(key=lambda r: r.site.line)
    # calls
    calls: dict[str, list[Call]] = defaultdict(list)
    for n, m in enumerate(_T_CALL.finditer(source)):
        if n >= _T_MAX_MATCHES:
            break
        name = m.group(1) or m.group(2)
        if re.search(r"\b(?:class|def)\s+$", source[max(0, m.start() - 10) : m.start()]):
            continue  # a definition, not a call
        inner = t.balanced(m.end() - 1, 1500)
        kwargs: dict[str, Value] = {}
        args: list[Value] = []
        for a in _split_top(inner):
            km = re.match(r"(\w+)\s*=(?!=)(.*)", a, re.S)
            if km:
                kwargs[km.group(1)] = _literal(km.group(2))
            elif a:
                args.append(_literal(a))
        before = source[max(0, m.start() - 40) : m.start()]
        if name.endswith(("Arguments", "Config")):
            label = "TrainingArguments"
        elif name == "Trainer" and re.search(r"\b(?:pl|L|lightning)\.$", before):
            label = "lightning.Trainer"
        elif name.endswith("Trainer"):
            label = "Trainer"
        else:
            label = name
        if label == "train" and "resume_from_checkpoint" not in kwargs and not re.search(r"trainer$", before, re.I):
            continue
        if label == "fit" and "ckpt_path" not in kwargs and not re.search(r"trainer$", before, re.I):
            continue
        calls[label].append(Call(name, t.site(m.start()), kwargs, tuple(args)))
    out.calls = dict(calls)
    for m in _T_ENV.finditer(source):
        out.env_reads.setdefault(m.group(1), t.site(m.start()))
    sm = re.search(r"\bsignal\s*\(\s*(?:signal\.)?SIGTERM\s*,\s*(?!(?:signal\.)?SIG_(?:DFL|IGN)\b)", source)
    if sm:
        out.sigterm_handler = t.site(sm.start())
    for n, m in enumerate(_T_PRINT.finditer(source)):
        if n >= _T_MAX_MATCHES:
            break
        text = m.group(2)
        if re.search(r"[A-Za-z]", text):
            out.prints.append(Site(t.line_no(m.start()), text[:400]))

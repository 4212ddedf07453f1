"""Word expansion as bash does it: quoting, `$VAR`, `${VAR:-x}` and the other parameter operators,
arithmetic, word splitting, arrays.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Sequence
from typing import Any

from ckpt_doctor.facts.program.shell.env import _Var
from ckpt_doctor.facts.program.shell.limits import _MAX_VALUE
from ckpt_doctor.facts.program.shell.program import Word
from ckpt_doctor.facts.program.shell.quoting import _ansi_c


class _Acc:
    """Collects one word's expansion: its value, partial text, fields and what was not resolved."""

    __slots__ = ("assumed", "bad", "cur", "fields", "partial", "unres", "value", "zero")

    def __init__(self) -> None:
        self.value: list[str] = []
        self.partial: list[str] = []
        self.fields: list[str] = []
        self.cur: list[str] | None = None
        self.unres: list[str] = []
        self.assumed: list[str] = []
        self.bad = False
        self.zero = 0  # "$@" / "${A[@]}" expansions with no element (they make no field)

    def lit(self, s: str) -> None:
        self.value.append(s)
        self.partial.append(s)
        if self.cur is None:
            self.cur = []
        self.cur.append(s)

    def quoted(self) -> None:
        if self.cur is None:
            self.cur = []

    def brk(self) -> None:
        if self.cur is not None:
            self.fields.append("".join(self.cur))
            self.cur = None

    def split(self, s: str) -> None:
        """An unquoted expansion result: split on blanks."""
        self.value.append(s)
        self.partial.append(s)
        if not s:
            return
        if s[0] in " \t\n":
            self.brk()
        words = s.split()
        for k, w in enumerate(words):
            if k:
                self.brk()
            if self.cur is None:
                self.cur = []
            self.cur.append(w)
        if s[-1] in " \t\n":
            self.brk()

    def multi(self, items: Sequence[str], quoted: bool) -> None:
        """ "$@" / "${A[@]}": one field per item (quoted), or each item split (unquoted)."""
        self.value.append(" ".join(items))
        self.partial.append(" ".join(items))
        if quoted and not items:
            self.zero += 1
        for k, it in enumerate(items):
            if quoted:
                if k:
                    self.brk()
                if self.cur is None:
                    self.cur = []
                self.cur.append(it)
            else:
                if k:
                    self.brk()
                words = it.split()
                for m, w in enumerate(words):
                    if m:
                        self.brk()
                    if self.cur is None:
                        self.cur = []
                    self.cur.append(w)

    def unresolved(self, raw: str, what: str | Sequence[str]) -> None:
        self.bad = True
        self.partial.append(raw)
        for w in [what] if isinstance(what, str) else what:
            if w not in self.unres:
                self.unres.append(w)

    def assume(self, name: str) -> None:
        if name not in self.assumed:
            self.assumed.append(name)

    def text(self) -> str:
        return "".join(self.value)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_DYNAMIC = {
    "RANDOM",
    "SRANDOM",
    "HOSTNAME",
    "BASHPID",
    "PPID",
    "SECONDS",
    "EPOCHSECONDS",
    "EPOCHREALTIME",
    "LINENO",
    "UID",
    "EUID",
    "GROUPS",
    "BASH_COMMAND",
    "SHLVL",
    "BASHOPTS",
    "SHELLOPTS",
}


_PLAIN_W = re.compile(r"[^\\'\"$`~]+")


_PLAIN_D = re.compile(r'[^\\"$`]+')


_PLAIN_H = re.compile(r"[^\\$`]+")


_PARAM_OPS = (
    ":-",
    ":=",
    ":+",
    ":?",
    "-",
    "=",
    "+",
    "?",
    "##",
    "#",
    "%%",
    "%",
    "//",
    "/#",
    "/%",
    "/",
    "^^",
    "^",
    ",,",
    ",",
    "@",
    ":",
)


def _match(s: str, i: int, end: int, close: str, open_: str) -> int:
    """Index of the `close` matching an already opened `open_` from i (quotes skipped); end if none."""
    depth = 0
    while i < end:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and close != "`":
            j = s.find("'", i + 1, end)
            i = end if j < 0 else j + 1
            continue
        if c == '"' and close != '"':
            i = _match(s, i + 1, end, '"', '"') + 1
            continue
        if c == "`" and close != "`":
            i = _match(s, i + 1, end, "`", "`") + 1
            continue
        if close == '"':
            if c == '"':
                return i
            if c == "$" and i + 1 < end and s[i + 1] in "({":
                i = _match(s, i + 2, end, ")" if s[i + 1] == "(" else "}", s[i + 1]) + 1
                continue
            i += 1
            continue
        if c == close and depth == 0:
            return i
        if c == open_ and open_ != close:
            depth += 1
        elif c == close:
            depth -= 1
        i += 1
    return end


def _first_slash(s: str) -> int:
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c in "'\"":
            j = s.find(c, i + 1)
            i = len(s) if j < 0 else j + 1
            continue
        if c == "/":
            return i
        i += 1
    return -1


def _glob_re(pat: str) -> str:
    out = []
    i = 0
    while i < len(pat):
        c = pat[i]
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            j = pat.find("]", i + 2)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pat[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "\\" and i + 1 < len(pat):
            out.append(re.escape(pat[i + 1]))
            i += 1
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


_ARITH_OPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Mod: None,
    ast.FloorDiv: None,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}


def _arith_eval(expr: str) -> int | None:
    expr = expr.strip()
    if not expr:
        return 0
    if len(expr) > 2000:
        return None
    py = re.sub(r"(?<![/*])/(?![/*])", "//", expr)
    py = py.replace("&&", " and ").replace("||", " or ")
    py = re.sub(r"!(?!=)", " not ", py)
    try:
        tree = ast.parse(py, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None

    def ev(node: ast.AST, depth: int = 0) -> int:
        if depth > 60:
            raise ValueError
        if isinstance(node, ast.Expression):
            return ev(node.body, depth + 1)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand, depth + 1)
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return v
            if isinstance(node.op, ast.Invert):
                return ~v
            if isinstance(node.op, ast.Not):
                return int(not v)
            raise ValueError
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH_OPS:
            a, b = ev(node.left, depth + 1), ev(node.right, depth + 1)
            if isinstance(node.op, ast.FloorDiv | ast.Mod):
                if b == 0:
                    raise ValueError
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                return q if isinstance(node.op, ast.FloorDiv) else a - q * b
            if isinstance(node.op, ast.Pow) and (b < 0 or b > 64):
                raise ValueError
            if isinstance(node.op, ast.LShift) and b > 64:
                raise ValueError
            return int(_ARITH_OPS[type(node.op)](a, b))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            a, b = ev(node.left, depth + 1), ev(node.comparators[0], depth + 1)
            ops = {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b, ast.Eq: a == b, ast.NotEq: a != b}
            r = ops.get(type(node.ops[0]))
            if r is None:
                raise ValueError
            return int(r)
        if isinstance(node, ast.BoolOp):
            vals = [ev(v, depth + 1) for v in node.values]
            return int(all(vals)) if isinstance(node.op, ast.And) else int(any(vals))
        raise ValueError

    try:
        v = ev(tree)
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError):
        return None
    return v if abs(v) < 1 << 63 else None


class Expand:
    def word(self, node: Any, assign: bool = False) -> Word:
        raw = self.src[node.start_byte : node.end_byte]
        ln, col = self.pos(node.start_byte)
        acc = _Acc()
        self.scan(raw, 0, len(raw), acc, "A" if assign else "W", 0)
        acc.brk()
        value = None if acc.bad else acc.text()
        if value is not None and len(value) > _MAX_VALUE:
            return Word(raw, None, ("<too long>",), ln, col, partial=raw, fields=None)
        return Word(
            raw,
            value,
            tuple(acc.unres),
            ln,
            col,
            partial="".join(acc.partial),
            fields=None if acc.bad else tuple(acc.fields),
            assumed=tuple(acc.assumed),
        )

    def scan(self, s: str, i: int, end: int, acc: _Acc, mode: str, depth: int) -> None:
        """Expand s[i:end] into acc. mode: W word, A assignment value, D "...", H here-doc body, O ${x:-operand}."""
        if depth > 40:
            acc.unresolved(s[i:end], s[i:end][:40])
            return
        plain = _PLAIN_W if mode in "WAO" else (_PLAIN_D if mode == "D" else _PLAIN_H)
        start = i
        while i < end:
            m = plain.match(s, i, end)
            if m:
                chunk = m.group(0)
                if mode == "O":
                    acc.split(chunk)
                else:
                    acc.lit(chunk)
                i = m.end()
                continue
            c = s[i]
            if c == "\\":
                if i + 1 >= end:
                    acc.lit("\\")
                    i += 1
                    continue
                nx = s[i + 1]
                if nx == "\n":
                    i += 2
                    continue
                if mode in "WAO" or nx in "$`\\" or (mode == "D" and nx == '"'):
                    acc.lit(nx)
                else:
                    acc.lit("\\" + nx)
                i += 2
                continue
            if c == "'" and mode in "WAO":
                j = s.find("'", i + 1, end)
                j = end if j < 0 else j
                acc.quoted()
                acc.lit(s[i + 1 : j])
                i = j + 1
                continue
            if c == '"' and mode in "WAO":
                j = _match(s, i + 1, end, '"', '"')
                fresh = acc.cur is None
                zero = acc.zero
                acc.quoted()
                self.scan(s, i + 1, j, acc, "D", depth + 1)
                if fresh and acc.zero > zero and acc.cur is not None and not "".join(acc.cur):
                    acc.cur = None  # "$@" with no positional parameters is no word at all
                i = j + 1
                continue
            if c == "`":
                j = _match(s, i + 1, end, "`", "`")
                body = s[i : j + 1]
                acc.unresolved(body, body if len(body) <= 60 else body[:57] + "...`")
                i = j + 1
                continue
            if c == "~":
                if mode in "WA" and (i == start or (mode == "A" and s[i - 1] == ":")):
                    j = i + 1
                    while j < end and s[j] not in "/:" and (s[j].isalnum() or s[j] in "_.-+"):
                        j += 1
                    user = s[i + 1 : j]
                    home = self.env.get("HOME")
                    if user == "" and home is not None and home.value is not None:
                        acc.lit(home.value)
                    elif user in ("+", "-"):
                        acc.unresolved(s[i:j], "~" + user)
                    else:
                        acc.unresolved(s[i:j], "~" + user)
                    i = j
                    continue
                if mode == "O":
                    acc.split("~")
                else:
                    acc.lit("~")
                i += 1
                continue
            if c == '"':  # in H mode a double quote is just text
                acc.lit('"')
                i += 1
                continue
            if c == "'":
                acc.lit("'")
                i += 1
                continue
            # c == "$"
            i = self.dollar(s, i, end, acc, mode, depth)

    def dollar(self, s: str, i: int, end: int, acc: _Acc, mode: str, depth: int) -> int:
        quoted = mode in "DHA"
        if i + 1 >= end:
            acc.lit("$")
            return i + 1
        nx = s[i + 1]
        if nx == "'" and mode in "WAO":
            j = i + 2
            while j < end and s[j] != "'":
                j += 2 if s[j] == "\\" else 1
            acc.quoted()
            acc.lit(_ansi_c(s[i + 2 : min(j, end)]))
            return j + 1
        if nx == '"' and mode in "WAO":
            j = _match(s, i + 2, end, '"', '"')
            acc.quoted()
            self.scan(s, i + 2, j, acc, "D", depth + 1)
            return j + 1
        if s.startswith("((", i + 1):
            j = _match(s, i + 3, end, ")", "(")
            # j is the first of the closing "))"
            inner = s[i + 3 : j]
            k = j + 2 if s.startswith("))", j) else j + 1
            self.arith(inner, s[i:k], acc, quoted, depth)
            return k
        if nx == "(":
            j = _match(s, i + 2, end, ")", "(")
            body = s[i : j + 1]
            acc.unresolved(body, body if len(body) <= 60 else body[:57] + "...)")
            return j + 1
        if nx == "{":
            j = _match(s, i + 2, end, "}", "{")
            self.param(s[i + 2 : j], s[i : j + 1], acc, mode, depth)
            return j + 1
        m = _NAME.match(s, i + 1, end)
        if m:
            self.var(m.group(0), s[i : m.end()], acc, quoted)
            return m.end()
        if nx.isdigit() or nx in "@*#?$!-":
            self.special(nx, "$" + nx, acc, quoted)
            return i + 2
        acc.lit("$")
        return i + 1

    def _put(self, acc: _Acc, value: str, quoted: bool) -> None:
        if quoted:
            acc.lit(value)
        else:
            acc.split(value)

    def lookup(self, name: str) -> tuple[str | None, tuple[str, ...], _Var | None]:
        """(value, unresolved, var) of $name."""
        if name == "PWD":
            if self.cwd is not None:
                return self.cwd, (), None
            return None, ("PWD",), None
        if name == "OLDPWD" and self.oldpwd is not None:
            return self.oldpwd, (), None
        var = self.env.get(name)
        if var is not None and (name not in _DYNAMIC or var.scripted):
            if var.value is None:
                return None, var.unresolved or (name,), var
            if var.array is not None:
                return (var.array[0] if var.array else ""), (), var
            return var.value, (), var
        if name in _DYNAMIC:
            return None, ("$" + name,), None
        return None, (name,), None

    def var(self, name: str, raw: str, acc: _Acc, quoted: bool) -> None:
        value, unres, var = self.lookup(name)
        if value is None:
            acc.unresolved(var.partial if var is not None and var.partial is not None else raw, unres)
            return
        if var is not None:
            for a in var.assumed:
                acc.assume(a)
        self._put(acc, value, quoted)

    def positional(self) -> list[str] | None:
        return None if self.args is None else self.args[1:]

    def special(self, ch: str, raw: str, acc: _Acc, quoted: bool) -> None:
        if ch.isdigit():
            if self.args is None:
                acc.unresolved(raw, "$" + ch)
                return
            k = int(ch)
            self._put(acc, self.args[k] if k < len(self.args) else "", quoted)
            return
        if ch in "@*":
            pos = self.positional()
            if pos is None:
                acc.unresolved(raw, "$" + ch)
                return
            if ch == "@" or not quoted:
                acc.multi(pos, quoted)  # "$*" joins, "$@" and unquoted $* make one field each
            else:
                acc.lit(" ".join(pos))
            return
        if ch == "#":
            pos = self.positional()
            if pos is None:
                acc.unresolved(raw, "$#")
            else:
                acc.lit(str(len(pos)))
            return
        acc.unresolved(raw, "$" + ch)

    def arith(self, inner: str, raw: str, acc: _Acc, quoted: bool, depth: int) -> None:
        sub = _Acc()
        self.scan(inner, 0, len(inner), sub, "H", depth + 1)
        if sub.bad:
            acc.unresolved(raw, sub.unres)
            return
        expr = sub.text()
        missing: list[str] = []

        def repl(m: re.Match[str]) -> str:
            name = m.group(0)
            value, unres, _v = self.lookup(name)
            if value is None:
                missing.extend(unres)
                return "0"
            v = value.strip()
            return v if re.fullmatch(r"-?\d+", v) else (missing.append(name) or "0")  # type: ignore[func-returns-value]

        expr2 = re.sub(r"(?<![0-9.])[A-Za-z_][A-Za-z0-9_]*", repl, expr)
        if missing:
            acc.unresolved(raw, missing)
            return
        v = _arith_eval(expr2)
        if v is None:
            acc.unresolved(raw, raw)
            return
        acc.lit(str(v))

    def param(self, body: str, raw: str, acc: _Acc, mode: str, depth: int) -> None:
        quoted = mode in "DHA"
        if not body:
            acc.unresolved(raw, raw)  # ${} is a bad substitution
            return
        length = indirect = False
        k = 0
        if body[0] == "#" and len(body) > 1 and body[1] not in "}":
            length = True
            k = 1
        elif body[0] == "!" and len(body) > 1:
            indirect = True
            k = 1
        m = _NAME.match(body, k)
        if m:
            name = m.group(0)
            k = m.end()
        elif k < len(body) and (body[k].isdigit()):
            j = k
            while j < len(body) and body[j].isdigit():
                j += 1
            name = body[k:j]
            k = j
        elif k < len(body) and body[k] in "@*#?$!-0":
            name = body[k]
            k += 1
        else:
            acc.unresolved(raw, raw)
            return
        index: str | None = None
        if k < len(body) and body[k] == "[":
            j = _match(body, k + 1, len(body), "]", "[")
            index = body[k + 1 : j]
            k = j + 1
        rest = body[k:]
        op = next((o for o in _PARAM_OPS if rest.startswith(o)), None) if rest else None
        if rest and op is None:
            acc.unresolved(raw, raw)
            return
        operand = rest[len(op) :] if op else ""
        # the value (and whether the variable is set)
        values, unres, is_set, var = self._param_value(name, index)
        if indirect:
            if values is None or len(values) != 1 or index is not None or op:
                acc.unresolved(raw, unres or (raw,))
                return
            target = values[0]
            if not (_NAME.fullmatch(target) or target.isdigit()):
                acc.unresolved(raw, raw)
                return
            values, unres, is_set, var = self._param_value(target, None)
        if length:
            if values is None:
                acc.unresolved(raw, unres)
                return
            if index in ("@", "*") or name in "@*":
                acc.lit(str(len(values)))
            else:
                acc.lit(str(len(values[0]) if values else 0))
            return
        multi = (index in ("@", "*")) or (name in ("@", "*") and index is None)
        star = index == "*" or (name == "*" and index is None)
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            colon = op.startswith(":")
            if values is None and is_set is None:
                # not known whether it is set: unknown names are taken as unset (and reported)
                is_set = False
            empty = values is not None and (not values or (len(values) == 1 and values[0] == ""))
            use_alt = (not is_set) or (colon and empty)
            if op in (":+", "+"):
                if use_alt:
                    if values is None and var is None and name not in _DYNAMIC:
                        acc.assume(name)
                    return
                if values is None and is_set:
                    acc.unresolved(raw, unres)
                    return
                self.scan(operand, 0, len(operand), acc, "D" if quoted else "O", depth + 1)
                return
            if not use_alt:
                if values is None:
                    acc.unresolved(raw, unres)
                    return
                self._emit(acc, values, quoted, multi, star)
                if var is not None:
                    for a in var.assumed:
                        acc.assume(a)
                return
            if op.endswith("?"):
                acc.unresolved(raw, unres or (name,))
                return
            if values is None and name in _DYNAMIC:
                acc.unresolved(raw, unres)
                return
            if var is None and not name.isdigit() and name not in "@*#?$!-":
                acc.assume(name)
            if op in (":=", "=") and _NAME.fullmatch(name):
                sub = _Acc()
                self.scan(operand, 0, len(operand), sub, "A", depth + 1)
                v = None if sub.bad else sub.text()
                self.assign(name, _Var(v, tuple(sub.unres), partial="".join(sub.partial)), 0, record=False)
            self.scan(operand, 0, len(operand), acc, "D" if quoted else "O", depth + 1)
            return
        if values is None:
            acc.unresolved(raw, unres)
            return
        if var is not None:
            for a in var.assumed:
                acc.assume(a)
        if op is None:
            self._emit(acc, values, quoted, multi, star)
            return
        # operand (pattern / replacement / offset) expanded as in double quotes; for ${x/pat/rep}
        # the two halves split at the first unescaped, unquoted slash first
        parts = [operand]
        if op in ("/", "//", "/#", "/%"):
            k = _first_slash(operand)
            parts = [operand[:k], operand[k + 1 :]] if k >= 0 else [operand, ""]
        texts = []
        for part in parts:
            sub = _Acc()
            self.scan(part, 0, len(part), sub, "H" if quoted else "W", depth + 1)
            if sub.bad:
                acc.unresolved(raw, sub.unres)
                return
            texts.append(sub.text())
        arg = "\x00".join(texts)
        try:
            out = [self._apply(op, v, arg) for v in values]
        except (re.error, ValueError, IndexError):
            acc.unresolved(raw, raw)
            return
        if any(o is None for o in out):
            acc.unresolved(raw, raw)
            return
        self._emit(acc, [o for o in out if o is not None], quoted, multi, star)

    def _emit(self, acc: _Acc, values: Sequence[str], quoted: bool, multi: bool, star: bool) -> None:
        if multi:
            if quoted and not star:
                acc.multi(values, True)
            elif quoted:
                acc.lit(" ".join(values))
            else:
                acc.multi(values, False)
        else:
            self._put(acc, values[0] if values else "", quoted)

    def _param_value(
        self, name: str, index: str | None
    ) -> tuple[list[str] | None, tuple[str, ...], bool | None, _Var | None]:
        """(values, unresolved, is_set (None = unknown), var)."""
        if name.isdigit():
            if self.args is None:
                return None, ("$" + name,), None, None
            k = int(name)
            return ([self.args[k]] if k < len(self.args) else None), (), k < len(self.args), None
        if name in "@*":
            pos = self.positional()
            if pos is None:
                return None, ("$" + name,), None, None
            return list(pos), (), bool(pos), None
        if name == "#":
            pos = self.positional()
            return (None, ("$#",), None, None) if pos is None else ([str(len(pos))], (), True, None)
        if name in "?$!-":
            return None, ("$" + name,), True, None
        if name in ("PWD", "OLDPWD"):
            value, unres, _ = self.lookup(name)
            return ([value] if value is not None else None), unres, value is not None or None, None
        var = self.env.get(name)
        if var is None or (name in _DYNAMIC and not var.scripted):
            if name in _DYNAMIC:
                return None, ("$" + name,), True, None
            return None, (name,), None, None
        if var.value is None and var.array is None:
            return None, var.unresolved or (name,), True, var
        arr = list(var.array) if var.array is not None else [var.value or ""]
        if index is None:
            return [arr[0] if arr else ""], (), True, var
        if index in ("@", "*"):
            return arr, (), bool(arr), var
        idx = index.strip()
        if idx.lstrip("-").isdigit():
            k = int(idx)
            if -len(arr) <= k < len(arr):
                return [arr[k]], (), True, var
            return [""], (), False, var
        return None, (f"{name}[{index}]",), None, var

    def _apply(self, op: str, v: str, arg: str) -> str | None:
        if op in ("#", "##"):
            rx = re.compile(_glob_re(arg), re.S)
            best = None
            for k in range(len(v) + 1):
                if rx.fullmatch(v, 0, k):
                    best = k
                    if op == "#":
                        break
            return v[best:] if best is not None else v
        if op in ("%", "%%"):
            rx = re.compile(_glob_re(arg), re.S)
            best = None
            rng = range(len(v), -1, -1) if op == "%" else range(0, len(v) + 1)
            for k in rng:
                if rx.fullmatch(v, k):
                    best = k
                    break
            return v[:best] if best is not None else v
        if op in ("/", "//", "/#", "/%"):
            pat, _, rep = arg.partition("\x00")
            if not pat:
                return v
            rx = _glob_re(pat)
            if op == "/#":
                return re.sub("^" + rx, lambda _m: rep, v, count=1, flags=re.S)
            if op == "/%":
                return re.sub("(?:" + rx + ")$", lambda _m: rep, v, count=1, flags=re.S)
            return re.sub(rx, lambda _m: rep, v, count=0 if op == "//" else 1, flags=re.S)
        if op in ("^^", "^"):
            return v.upper() if op == "^^" else v[:1].upper() + v[1:]
        if op in (",,", ","):
            return v.lower() if op == ",," else v[:1].lower() + v[1:]
        if op == ":":
            off_s, _, len_s = arg.partition(":")
            off = _arith_eval(off_s) if off_s.strip() else 0
            if off is None:
                return None
            if off < 0:
                off = max(0, len(v) + off)
            if len_s.strip():
                ln = _arith_eval(len_s)
                if ln is None:
                    return None
                return v[off : off + ln] if ln >= 0 else v[off : len(v) + ln]
            return v[off:]
        if op == "@":
            if arg == "Q":
                import shlex

                return shlex.quote(v)
            if arg in ("U", "L", "u"):
                return v.upper() if arg == "U" else (v.lower() if arg == "L" else v[:1].upper() + v[1:])
            if arg == "E":
                return _ansi_c(v)
            return None
        return None

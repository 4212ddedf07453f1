"""Credentials in Python source, found by parsing it (`ast`), not by the look of a line.

Where the text is Python (a ConfigMap's `*.py`, the trainer's script), a credential is a string literal that
stands where code hands over a credential, however the call is laid out (a keyword on the next line, a value
in parentheses, implicit concatenation):

- a keyword argument whose name reads as one (`password=`, `token=`, `aws_secret_access_key=`, `api_key=`);
- `auth=("svc", "X")` (requests, httpx, aiohttp's `BasicAuth`) and `HTTPBasicAuth("svc", "X")`: the second item;
- a positional password of a well-known call (`PY_POSITIONAL`: `smtp.login(user, X)`, `ftplib.FTP(host, user, X)`,
  `keyring.set_password(service, user, X)`, `pymysql.connect(host, user, X)`, `Minio(host, KEY, SECRET)`);
- an assignment to a name, attribute or subscript that reads as one (`HF_TOKEN = "X"`, `os.environ["TOKEN"] = "X"`,
  `cfg.password = "X"`) and a dict literal's value under such a key.

`python_spans(source)` returns the byte spans (of the UTF-8 text) of the literals' contents: the quotes and a
`b`/`r` prefix stay, so the line still reads as code. Source that does not parse yields nothing (the text
shapes still run over it).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ckpt_doctor.sources.redact_names import credential_position, sensitive_name

MAX_SOURCE = 1 << 20  # larger files are left to the text shapes: parsing is bounded

# call name (its last dotted part, or `module.name`) -> positions of credential arguments
PY_POSITIONAL: dict[str, tuple[int, ...]] = {
    "HTTPBasicAuth": (1,),
    "HTTPDigestAuth": (1,),
    "HTTPProxyAuth": (1,),
    "BasicAuth": (1,),
    "DigestAuth": (1,),
    "set_password": (2,),
    "FTP": (2,),
    "FTP_TLS": (2,),
    "pymysql.connect": (2,),
    "MySQLdb.connect": (2,),
    "Minio": (1, 2),
    "Redis": (3,),
    "StrictRedis": (3,),
}
AUTH_KEYWORDS = frozenset({"auth", "basic_auth", "http_auth", "proxy_auth", "credentials"})


def _call_name(func: ast.expr) -> tuple[str, str]:
    """(last part, `module.last`) of what is called."""
    if isinstance(func, ast.Name):
        return func.id, func.id
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        return func.attr, f"{owner}.{func.attr}" if owner else func.attr
    return "", ""


def _literal(node: ast.expr | None) -> ast.Constant | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes) and node.value:
        return node
    return None


def _target_name(t: ast.expr) -> str:
    if isinstance(t, ast.Name):
        return t.id
    if isinstance(t, ast.Attribute):
        return t.attr
    if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str):
        return t.slice.value
    return ""


def _secret_literals(tree: ast.AST) -> Iterator[ast.Constant]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            last, dotted = _call_name(node.func)
            for kw in node.keywords:
                if kw.arg is None:
                    continue
                if kw.arg in AUTH_KEYWORDS and isinstance(kw.value, ast.Tuple | ast.List) and len(kw.value.elts) >= 2:
                    lit = _literal(kw.value.elts[1])
                    if lit is not None:
                        yield lit
                    continue
                lit = _literal(kw.value)
                if lit is not None and credential_position(kw.arg, _text(lit)):
                    yield lit
            at = PY_POSITIONAL.get(dotted) or PY_POSITIONAL.get(last) or ()
            if last == "login" and isinstance(node.func, ast.Attribute) and len(node.args) >= 2:
                at = (1,)  # smtplib, imaplib, ftplib, poplib: .login(user, password)
            for i in at:
                lit = _literal(node.args[i]) if i < len(node.args) else None
                if lit is not None:
                    yield lit
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            lit = _literal(node.value)
            if lit is not None and any(sensitive_name(_target_name(t)) for t in targets):
                yield lit
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                lit = _literal(v)
                key = k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else ""
                if lit is not None and key and credential_position(key, _text(lit)):
                    yield lit


def _text(lit: ast.Constant) -> str:
    v = lit.value
    return v.decode("latin-1") if isinstance(v, bytes) else str(v)


def python_spans(source: str) -> list[tuple[int, int]]:
    """Byte spans, in `source` encoded as UTF-8, of the contents of the string literals that hold credentials."""
    if len(source) > MAX_SOURCE or not any(c in source for c in "=("):
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    data = source.encode("utf-8", "surrogatepass")
    starts = [0]
    nl = data.find(b"\n")
    while nl >= 0:
        starts.append(nl + 1)
        nl = data.find(b"\n", nl + 1)
    spans: set[tuple[int, int]] = set()
    for lit in _secret_literals(tree):
        if lit.end_lineno is None or lit.end_col_offset is None:
            continue
        s = starts[lit.lineno - 1] + lit.col_offset  # col offsets are UTF-8 byte offsets
        e = starts[lit.end_lineno - 1] + lit.end_col_offset
        seg = data[s:e]
        first = min((seg.find(q) for q in (b'"', b"'") if q in seg), default=-1)
        if first < 0:
            continue
        quote = seg[first : first + 3] if seg[first : first + 3] in (b'"""', b"'''") else seg[first : first + 1]
        a, b = s + first + len(quote), e - len(quote)
        if b > a:
            spans.add((a, b))
    return sorted(spans)

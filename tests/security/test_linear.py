"""Regular-expression denial of service: the redactor's work grows linearly with its input, on crafted lines too.

Every pattern that sees user data is RE2 (google-re2: linear time by construction, no backtracking); the
Python-level work around them (decoding base64 and %-encoded runs, splitting shell commands, the login parser)
is counted here on 120 KB lines crafted against each pattern, and must stay within a constant factor of the
input. No timing asserts: bench/bench_redact.py shows the times, before and after.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ckpt_doctor.sources import redact, redact_findings, redact_names, redact_shapes
from ckpt_doctor.sources.redact import Redactor

N = 120_000


def crafted(n: int = N) -> dict[str, str]:
    """Lines of about `n` bytes built to make a backtracking engine go quadratic (or worse) on each pattern."""
    N = n
    return {
        "url: scheme-like run, userinfo, no @ (the 22 s line)": "a-" * (N // 6) + "://" + "b" * (N // 3) + ":"
        + "c" * (N // 3),
        "url userinfo pairs, no @": "x a://" + "b:" * (N // 2),
        "url scheme, no userinfo": "https://" + "a" * N,
        "many urls": "a://b:c@ " * (N // 9),
        "flags without values": "--password " * (N // 11),
        "dashes": "-" * N,
        "assignments without values": "password=" * (N // 9),
        "a long name before =": "a" * N + "=",
        "name stems run together": "tokenpasskeysecret" * (N // 18),
        "header names without values": "Authorization: " * (N // 15),
        "x- prefixes": "x-" * (N // 2),
        "netrc machines without passwords": "machine a login b " * (N // 18),
        "login words": "login " * (N // 6),
        "login flags": "docker login -p " * (N // 16),
        "config set pairs": "aws configure set " * (N // 18),
        "BEGIN without END": "-----BEGIN PRIVATE KEY-----" * (N // 27),
        "key lines without END": ("A" * 63 + "\n") * (N // 64),
        "one base64 run": "A" * N,
        "base64 runs with digits": "Aa0+Aa0+Aa0+ " * (N // 13),
        "percent escapes": "%41" * (N // 3),
        "broken percent escapes": "%4" * (N // 2),
        "json ids near a secret": '"private_key": "", ' + '"a_id": "x", ' * (N // 13),
        "quotes": "\"'" * (N // 2),
        "newlines": "\n" * N,
        # the grammar, config formats, nested JSON, next-line values and wrapped tokens (issue 22)
        "tool words and glued flags": "mysql -p " * (N // 9),
        "quoted commands in quoted commands": "sh -c \"sudo -S 'mysql -pX " * (N // 28),
        "echo into a stdin reader": "echo x | sudo -S " * (N // 17),
        "positional tools": "mc alias set a b c d " * (N // 21),
        "escaped quotes": '"\\"' * (N // 3),
        "JSON strings in JSON strings": '{"a": "{\\"b\\": \\"' * (N // 20),
        "keys at line ends": "token: |\n" * (N // 9),
        "keys ever more indented": "".join(" " * (i % 200) + "token: |\n" for i in range(N // 100)),
        "xml tags": "<password>" * (N // 10),
        "xml elements": "<password>x</passwor>" * (N // 21),
        "pgpass fields": "a:1:b:c:" * (N // 8),
        "python auth tuples": 'auth=("a", ' * (N // 11),
        "long lines ending in tokens": ("a" * 70 + " Bearer " + "Ab1" * 10 + "\n" + "Cd2" * 10 + "\n") * (N // 120),
    }


class Work:
    """Bytes each piece of Python-level work touched."""

    def __init__(self) -> None:
        self.scanned = self.decoded = self.split = self.words = 0


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> Iterator[Work]:
    w = Work()
    scan = Redactor._scan
    decode = redact_shapes._b64decode
    split = redact_shapes.split_command
    spans = redact_shapes.command_spans

    def counting_scan(self: Redactor, data: bytes, depth: int, count: bool) -> tuple[bytes, int]:
        w.scanned += len(data)
        return scan(self, data, depth, count)

    def counting_decode(run: bytes) -> bytes | None:
        w.decoded += len(run)
        return decode(run)

    def counting_split(data: bytes, start: int = 0, end: int | None = None) -> Any:
        w.split += (len(data) if end is None else end) - start
        return split(data, start, end)

    def counting_spans(words: list[bytes]) -> Any:
        w.words += sum(len(x) + 1 for x in words)
        return spans(words)

    monkeypatch.setattr(Redactor, "_scan", counting_scan)
    monkeypatch.setattr(redact_shapes, "_b64decode", counting_decode)
    monkeypatch.setattr(redact_shapes, "split_command", counting_split)
    monkeypatch.setattr(redact_shapes, "command_spans", counting_spans)
    yield w


@pytest.mark.parametrize("name", list(crafted()))
def test_work_is_linear_on_crafted_lines(name: str, work: Work) -> None:
    line = crafted()[name]
    n = len(line.encode())
    Redactor().text(line)
    assert work.scanned <= 3 * n  # the line, and at most its decoded forms (two levels)
    assert work.decoded <= 2 * n
    nested = redact_shapes.MAX_NESTING + 1  # a quoted command is split again, at most this many levels deep
    assert work.split <= nested * n
    assert work.words <= nested * n


def test_doubling_the_input_doubles_the_work(work: Work) -> None:
    """On every crafted line at once: twice the input, about twice the counted work (linear, not quadratic)."""
    lines = crafted(N // 2)
    totals = []
    for factor in (1, 2):
        for k in ("scanned", "decoded", "split", "words"):
            setattr(work, k, 0)
        for line in lines.values():
            Redactor().text(line * factor)
        totals.append(work.scanned + work.decoded + work.split + work.words)
    assert totals[1] <= 2.2 * totals[0]


def _patterns(module: Any) -> Iterator[tuple[str, Any]]:
    for name, value in vars(module).items():
        if isinstance(value, re.Pattern) or type(value).__name__ == "_Regexp":
            yield name, value
        elif isinstance(value, tuple) and name == "SHAPES":
            for i, shape in enumerate(value):
                yield f"SHAPES[{i}]", shape


def test_every_pattern_that_sees_user_data_is_re2() -> None:
    """Python `re` is left only on bounded input: names (at most MAX_NAME characters) and evidence paths."""
    python_re = set()
    for module in (redact, redact_shapes, redact_names, redact_findings):
        for name, value in _patterns(module):
            if isinstance(value, re.Pattern):
                python_re.add(f"{module.__name__.rsplit('.', 1)[1]}.{name}")
    assert python_re == {"redact_names._CAMEL", "redact_names._SPLIT", "redact_findings._SEGMENT"}
    assert redact_names.MAX_NAME <= 256
    assert not redact_names.sensitive_name("A" * 300 + "_PASSWORD")  # too long to be a name: not judged


def _closures(f: Callable[..., Any]) -> list[Any]:
    return [c.cell_contents for c in (f.__closure__ or ())]


def test_the_shapes_compile_only_re2_patterns() -> None:
    for shape in redact_shapes.SHAPES:
        for inner in _closures(shape.find):
            assert not isinstance(inner, re.Pattern), shape.kind

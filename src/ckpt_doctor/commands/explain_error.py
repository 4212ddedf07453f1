"""`ckpt-doctor explain-error [TEXT | -]`: match an apply-time error to its rule and fix."""

from __future__ import annotations

import argparse
import json
import sys

from ckpt_doctor.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explain-error",
        help="match an apply-time error (e.g. a webhook denial) to its rule and fix",
        description=(
            "Paste the error kubectl printed when it refused a TrainJob or runtime (or pipe it in with -): "
            "ckpt-doctor names the rule, the cause and the fix. Exit 0 when the error is recognised, 1 when not."
        ),
        epilog="Example: kubectl apply -f trainjob.yaml 2>&1 | ckpt-doctor explain-error -",
    )
    p.add_argument("text", nargs="*", metavar="TEXT", help="the error text (several words are joined), or - for stdin")
    p.add_argument(
        "-o", "--output", choices=("text", "json", "markdown"), default="text", help="output format (default: text)"
    )
    p.set_defaults(func=run)


def read_text(words: list[str]) -> str:
    if not words or words == ["-"]:
        if not words and sys.stdin.isatty():
            raise UsageError("give the error text as an argument, or - to read it from standard input")
        return sys.stdin.read()
    return " ".join(words)


def run(args: argparse.Namespace) -> int:
    from ckpt_doctor.explain import explain, render_text

    text = read_text(args.text)
    if not text.strip():
        raise UsageError("the error text is empty")
    from ckpt_doctor.sources.redact import Redactor, redact_diagnosis

    ex = explain(text)
    r = Redactor()
    redact_diagnosis(ex.diagnosis, r)  # the error text may quote a token: what is printed is redacted
    if args.output == "json":
        sys.stdout.write(json.dumps(r.obj(ex.to_json()), indent=2, ensure_ascii=False, default=str) + "\n")
    elif args.output == "markdown":
        from ckpt_doctor.report.markdown import render

        sys.stdout.write(r.text(render(ex.diagnosis) if ex.recognised else render_text(ex)))
    else:
        sys.stdout.write(r.text(render_text(ex)))
    return ex.exit_code()

"""`ckpt-doctor mcp`: serve the read-only tools to an assistant over the Model Context Protocol (stdio)."""

from __future__ import annotations

import argparse
import sys

from ckpt_doctor.cli import add_cluster_flags, add_diagnosis_flags, add_log_flags


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help="a Model Context Protocol server on stdio for assistants (read-only tools, redacted)",
        description="Serve ckpt-doctor's read-only tools to an MCP client (Claude Desktop, VS Code, …) on standard "
        "input and output: list TrainJobs, diagnose one (live or from a bundle), explain an apply error, lint "
        "manifests, the post-incident report, the rules. The cluster is the one these flags (or the kubeconfig) "
        "name, read-only; nothing is written anywhere; every output is redacted. See docs/assistants.md.",
    )
    add_diagnosis_flags(p)
    add_cluster_flags(p)
    add_log_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ckpt_doctor.mcp.server import serve  # the MCP SDK loads here, for this verb only
    from ckpt_doctor.mcp.tools import Settings

    if sys.stdin.isatty():
        print(
            "ckpt-doctor mcp: serving MCP on standard input/output; an MCP client starts this command "
            "(docs/assistants.md). Ctrl-C stops it.",
            file=sys.stderr,
        )
    serve(
        Settings(
            kubeconfig=args.kubeconfig,
            context=args.context,
            namespace=args.namespace,
            request_timeout=args.request_timeout,
            concurrency=args.concurrency,
            log_bytes=args.log_bytes,
            trainer_version=args.trainer_version,
            signatures=tuple(args.signatures),
        )
    )
    return 0

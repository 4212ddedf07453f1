"""Command-line entry point: argument parsing only; each verb lives in ckpt_doctor.commands."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from ckpt_doctor import __version__
from ckpt_doctor.errors import EXIT_INPUT, EXIT_USAGE, InputError, InternalError, UsageError

# verb modules, in the order `--help` lists them; each has register(subparsers)
VERBS = (
    "tui",
    "diagnose",
    "lint",
    "explain_error",
    "collect",
    "drill",
    "report",
    "rules",
    "rbac",
    "watch",
    "mcp",
    "analyzer",
    "sandbox",
)


def add_cluster_flags(p: argparse.ArgumentParser) -> None:
    """The flags kubectl users expect, for every verb that may talk to a cluster."""
    g = p.add_argument_group("cluster (like kubectl)")
    g.add_argument("-n", "--namespace", type=namespace_arg, help="namespace of the TrainJob (default: the context's)")
    g.add_argument("--context", help="kubeconfig context to use")
    g.add_argument("--kubeconfig", help="path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    g.add_argument(
        "--request-timeout",
        type=positive_seconds,
        default=15.0,
        metavar="SECONDS",
        help="timeout of each API request (default: 15)",
    )


LOG_WINDOW = 128 * 1024  # = facts.logs.HEAD_BYTES / TAIL_BYTES (not imported: keep `--help` fast)


def namespace_arg(text: str) -> str:
    """argparse type of -n: a name Kubernetes accepts for a namespace (one it refuses cannot exist)."""
    from ckpt_doctor.k8snames import namespace_problem

    bad = namespace_problem(text)
    if bad:
        raise argparse.ArgumentTypeError(bad)
    return text


def trainjob_target(text: str) -> str:
    """argparse type of a `[NAMESPACE/]TRAINJOB` target: a typo in a name is a usage error before any cluster is
    asked (a name Kubernetes refuses cannot exist)."""
    from ckpt_doctor.k8snames import target_problem

    bad = target_problem(text)
    if bad:
        raise argparse.ArgumentTypeError(bad)
    return text


def positive_int(text: str) -> int:
    """argparse type: a whole number greater than 0."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n <= 0:
        raise argparse.ArgumentTypeError("must be greater than 0")
    return n


def positive_seconds(text: str) -> float:
    """argparse type: a number of seconds greater than 0 (a timeout of 0 or less is no timeout anyone means)."""
    try:
        n = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not n > 0 or n == float("inf"):  # also NaN
        raise argparse.ArgumentTypeError("must be a number of seconds greater than 0")
    return n


def listen_address(text: str) -> tuple[str, int]:
    """argparse type of --listen (ckpt_doctor.listen.parse_listen)."""
    from ckpt_doctor.listen import parse_listen

    try:
        return parse_listen(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_inspect_flags(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Listing the checkpoint directory on the cluster (docs/live.md: exec, or a reader pod)."""
    p.add_argument(
        "--inspect-checkpoints",
        action="store_true",
        help="also list the TrainJob's checkpoint directory (find/ls, df, head -c of small state files, run "
        "read-only through exec in a running trainer container; needs create on pods/exec)",
    )
    p.add_argument(
        "--inspect-image",
        metavar="IMAGE",
        help="with no trainer pod running, the image of the short-lived reader pod that mounts the checkpoint PVC "
        "read-only (default: the trainer's own image); it is created only after you confirm",
    )
    p.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="create that reader pod without asking (it is deleted as soon as the listing is read)",
    )


def inspect_options(args: argparse.Namespace) -> Any:
    """The `Inspect` of the --inspect-* flags (None when not asked): a reader pod is confirmed on the terminal,
    or by --yes; without a terminal and without --yes it is never created."""
    if not getattr(args, "inspect_checkpoints", False):
        return None
    import sys

    from ckpt_doctor.sources.live.inspect import Inspect

    yes = bool(getattr(args, "yes", False))

    def confirm(question: str) -> bool:
        if yes:
            print(f"ckpt-doctor: {question}: yes (--yes)", file=sys.stderr)
            return True
        if not sys.stdin.isatty():
            return False
        print(f"ckpt-doctor: {question} [y/N] ", end="", file=sys.stderr, flush=True)
        try:
            return sys.stdin.readline().strip().lower() in ("y", "yes")
        except (OSError, KeyboardInterrupt):
            return False

    return Inspect(image=getattr(args, "inspect_image", None), confirm=confirm,
                   timeout=max(float(getattr(args, "request_timeout", 15.0)), 15.0) * 2)  # fmt: skip


def add_log_flags(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """How container logs are read from a cluster, for every verb that reads them."""
    p.add_argument(
        "--log-bytes",
        type=positive_int,
        default=LOG_WINDOW,
        metavar="N",
        help=f"bytes read from the head and from the tail of each log (default: {LOG_WINDOW})",
    )
    p.add_argument("--concurrency", type=positive_int, default=8, metavar="N", help="parallel log reads (default: 8)")


def trainer_version_arg(value: str) -> str:
    """argparse type of --trainer-version: a version the engine knows (v2.1, 2.2.0, …)."""
    from ckpt_doctor.facts.versions import KNOWN, normalise

    if normalise(value) is None:
        raise argparse.ArgumentTypeError(f"unknown Trainer version {value!r} (known: {', '.join(KNOWN)})")
    return value


def add_diagnosis_flags(p: argparse.ArgumentParser) -> None:
    """What the engine takes besides the snapshot, for every verb that diagnoses."""
    p.add_argument(
        "--trainer-version",
        type=trainer_version_arg,
        metavar="v2.x",
        help="the cluster's Trainer version, if the bundle or cluster does not say",
    )
    p.add_argument(
        "--signatures",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a directory of extra log signature files (repeatable)",
    )


_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def byte_size(text: str) -> int:
    """argparse type: a size in bytes, with an optional K, M, G or T suffix (powers of 1024)."""
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = t[-1:] if t[-1:] in _UNITS and not t[-1:].isdigit() else ""
    try:
        n = float(t[: len(t) - len(unit)]) * _UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 4G, 512M, 1000000)") from None
    if n <= 0:
        raise argparse.ArgumentTypeError("must be greater than 0")
    return int(n)


def add_bundle_limit_flags(p: argparse.ArgumentParser) -> None:
    """How much an archive bundle may hold (docs/security.md), for every verb that reads `--bundle`."""
    g = p.add_argument_group("bundle archive limits")
    g.add_argument(
        "--max-bundle-bytes",
        type=byte_size,
        metavar="SIZE",
        help="refuse an archive that extracts to more than SIZE (default: 2G)",
    )
    g.add_argument(
        "--max-bundle-entries", type=positive_int, metavar="N", help="refuse an archive of more than N entries (50000)"
    )
    g.add_argument(
        "--max-bundle-ratio",
        type=positive_int,
        metavar="N",
        help="refuse an archive that expands more than N times its size past 64 MiB (default: 200)",
    )


def _apply_bundle_limits(args: argparse.Namespace) -> None:
    """The archive limits of this run: the flags given, the defaults for the rest (set for every run of a verb
    that reads bundles, so one run's flags never carry over to the next in the same process)."""
    if not hasattr(args, "max_bundle_bytes"):
        return
    from ckpt_doctor.sources.archive_limits import DEFAULT_LIMITS, Limits, set_limits  # not the readers

    d = DEFAULT_LIMITS
    set_limits(
        Limits(
            args.max_bundle_bytes or d.max_bytes,
            args.max_bundle_entries or d.max_entries,
            args.max_bundle_ratio or d.max_ratio,
        )
    )


class _Parser(argparse.ArgumentParser):
    """A usage error is one line that names the verb and where its help is (argparse printed the whole usage of
    the verb, 15 lines, above it; and an unknown flag after a verb named the top-level usage, not the verb's)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; `only` registers a single verb (the app's first frame should not wait for the rest)."""
    parser = _Parser(
        prog="ckpt-doctor",
        description="Find out why a Kubeflow Trainer v2 TrainJob did not resume from its checkpoint.",
        epilog="Exit codes: 0 ok, 1 findings at or above --fail-on, 2 usage, 3 input/connection error, "
        "4 --strict and something could not be evaluated.",
    )
    parser.add_argument("--version", action="version", version=f"ckpt-doctor {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="COMMAND")
    for verb in VERBS if only is None else (only,):
        try:
            mod = importlib.import_module(f"ckpt_doctor.commands.{verb}")
        except ModuleNotFoundError as e:
            if e.name == f"ckpt_doctor.commands.{verb}":
                continue  # verb not built yet
            raise
        mod.register(sub)
    for verb_parser in sub.choices.values():  # every verb that reads a bundle gets its archive limits
        opts = {o for a in verb_parser._actions for o in a.option_strings}
        if "--bundle" in opts and "--max-bundle-bytes" not in opts:
            add_bundle_limit_flags(verb_parser)
    return parser


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each registered verb's own parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _verbs(parser: argparse.ArgumentParser) -> set[str]:
    return set(_subparsers(parser))


def _one_line(e: BaseException) -> str:
    from ckpt_doctor.sources.redact import redact_text

    return redact_text(" ".join(str(e).split()))


class _RedactedStderr:
    """stderr with every line through the one redactor (loaded on the first write, so `--help` stays fast)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._inner: Any = None

    def write(self, s: str) -> int:
        if self._inner is None:
            from ckpt_doctor.sources.redact import RedactingStream

            self._inner = RedactingStream(self._stream)
        return int(self._inner.write(s))

    def flush(self) -> None:
        (self._inner or self._stream).flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    bare = not args_list or (args_list[0].startswith("-") and args_list[0] not in ("-h", "--help", "--version"))
    if bare or args_list[0] == "tui":
        return _main(args_list)  # the app draws on the terminal itself (Textual writes to sys.__stderr__)
    import signal

    from ckpt_doctor.signals import handled, raise_interrupt

    stderr = sys.stderr
    sys.stderr = _RedactedStderr(stderr)  # every error and note line leaves through the redactor
    try:
        # Ctrl-C unwinds as always (KeyboardInterrupt), but never from inside a request to the cluster (signals.py)
        with handled((signal.SIGINT,), raise_interrupt, keep_ignored=True):
            return _main(args_list)
    finally:
        try:
            sys.stderr.flush()
        finally:
            sys.stderr = stderr


def _main(args_list: list[str]) -> int:
    bare = not args_list or (args_list[0].startswith("-") and args_list[0] not in ("-h", "--help", "--version"))
    if bare or args_list[0] == "tui":
        # the app: register only its verb, so the first frame does not wait for every engine import
        parser = build_parser(only="tui")
        if "tui" in _verbs(parser) and bare:
            args_list = ["tui", *args_list]
    else:
        parser = build_parser()
    args, extra = parser.parse_known_args(args_list)
    if extra:  # the verb's own parser says it, with the verb's name
        verb = _subparsers(parser).get(getattr(args, "verb", None) or "")
        (verb or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    _apply_bundle_limits(args)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except UsageError as e:
        print(f"ckpt-doctor {args.verb}: error: {_one_line(e)} (see `ckpt-doctor {args.verb} --help`)", file=sys.stderr)
        return EXIT_USAGE
    except InputError as e:
        print("ckpt-doctor: error: " + _one_line(e), file=sys.stderr)
        return EXIT_INPUT
    except InternalError as e:
        hint = "please report it (CKPT_DOCTOR_DEBUG=1 shows the traceback)"
        print(f"ckpt-doctor: internal error: {_one_line(e)}; {hint}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("ckpt-doctor: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0

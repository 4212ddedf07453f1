"""`ckpt-doctor lint`: check manifests before they are applied, and `--fix` what is mechanical."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ckpt_doctor.cli import trainer_version_arg
from ckpt_doctor.commands.common import add_output_flags, emit
from ckpt_doctor.errors import InputError

if TYPE_CHECKING:
    from ckpt_doctor.lint import LintResult
    from ckpt_doctor.sources.manifests import Note


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "lint",
        help="check manifests before they are applied (guided first-time setup)",
        description=(
            "Read TrainJob, TrainingRuntime, ClusterTrainingRuntime, PVC, StorageClass and ConfigMap manifests "
            "and judge every cause of a failed resume that manifests can show, merged the way the Trainer "
            "controller merges them. Symptoms need a cluster and are listed as not evaluated."
        ),
        epilog="Exit codes: 0 nothing failed at or above --fail-on, 1 findings, 2 usage, 3 unreadable path, "
        "4 --strict and something could not be evaluated.",
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="FILE_OR_DIR",
        help="manifest files, folders (searched recursively for *.yaml, *.yml, *.json) or - for standard input",
    )
    p.add_argument(
        "--trainer-version",
        type=trainer_version_arg,
        metavar="v2.x",
        help="the cluster's Trainer version (default: inferred from the override fields used, else the newest)",
    )
    add_output_flags(p, ("text", "json", "markdown", "sarif", "junit"))
    p.add_argument("--fix", action="store_true", help="rewrite the files in place for the mechanical fixes")
    p.add_argument(
        "--dry-run", action="store_true", help="print the unified diff --fix would write; write nothing (implies --fix)"
    )
    p.set_defaults(func=run)


def _notes(result: LintResult) -> None:
    for n in result.manifests.notes:
        print(f"ckpt-doctor: note: {n.where()}: {n.message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from ckpt_doctor.lint import lint_paths  # the engine loads only when a verb runs, not for --help

    result = lint_paths(args.paths, args.trainer_version)
    if not result.manifests.files:  # nothing it was given is a manifest: an input error, each file noted
        skipped = [n for n in result.manifests.notes if n.kind != "version"]
        for n in skipped:
            print(f"ckpt-doctor: note: {n.where()}: {n.message}", file=sys.stderr)
        what = ", ".join(args.paths)
        why = (
            f"{len(skipped)} file(s) skipped, see the notes above" if skipped else "no .yaml, .yml or .json file there"
        )
        raise InputError(f"nothing in {what} could be read as a Kubernetes manifest ({why})")
    if args.fix or args.dry_run:
        from ckpt_doctor.fix import fix_result
        from ckpt_doctor.sources.redact import Redactor

        redactor = Redactor()  # the diff quotes the manifests' lines around each change: credentials too
        outcome = fix_result(result, write=not args.dry_run)
        for lint_result in (result, outcome.after):  # what reads as a credential by its name, in any line
            for mf in lint_result.manifests.files:
                for obj in mf.objects:
                    redactor.learn(obj.raw)
        for line in outcome.messages():
            print(f"ckpt-doctor: {redactor.text(line)}", file=sys.stderr)
        if not outcome.changes:
            print("ckpt-doctor: nothing to fix mechanically", file=sys.stderr)
        if args.dry_run:  # nothing was written: the exit code is the files' as they are, as a CI check wants
            sys.stdout.write(redactor.text(outcome.diff))
            return result.exit_code(args.fail_on, args.strict)
        result = outcome.after
    if args.output != "text":
        _notes(result)
    from ckpt_doctor.sources.redact import redact_diagnosis  # a SARIF upload leaves the machine: redact it

    emit(redact_diagnosis(result.diagnosis), args.output, args.verbose)
    broken = _named_and_invalid(args.paths, result)
    if broken:  # a file the user named that kubectl apply would reject: the check cannot pass
        n = broken[0]
        more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
        raise InputError(f"{n.where()}: {n.message}{more}; the other files were linted above: fix it, or leave it "
                         "out of the command")  # fmt: skip
    return result.exit_code(args.fail_on, args.strict)


def _named_and_invalid(paths: list[str], result: LintResult) -> list[Note]:
    """Notes of files named on the command line (not found in a folder, where YAML that is not a manifest is
    common) that are not valid YAML."""
    from pathlib import Path

    from ckpt_doctor.sources.manifests import STDIN_DISPLAY

    named = {STDIN_DISPLAY if p == "-" else str(Path(p)) for p in paths if p == "-" or not Path(p).is_dir()}
    return [n for n in result.manifests.notes if n.kind == "invalid" and (n.file in named or n.file in paths)]

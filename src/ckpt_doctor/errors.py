"""Errors that end a command with a one-line message and a documented exit code."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_INCOMPLETE = 4


class InputError(Exception):
    """Bad or unreadable input (bundle, manifest, cluster, target): exit 3.

    `where` names the file or object, `message` says what is wrong and what to do.
    """

    def __init__(self, message: str, where: str | None = None) -> None:
        self.where = where
        self.message = message
        super().__init__(f"{where}: {message}" if where else message)


class UsageError(Exception):
    """The command line is wrong (a missing or conflicting argument): exit 2, like argparse's own errors."""


class InternalError(Exception):
    """A bug in ckpt-doctor (a check raised): exit 3 loudly, never a silent pass."""

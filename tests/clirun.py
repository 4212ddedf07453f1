"""The CLI run in-process for tests: the exit code, stdout and stderr of one invocation."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Sequence
from typing import Any, NamedTuple


class Result(NamedTuple):
    rc: int
    out: str
    err: str

    def json(self) -> dict[str, Any]:
        return json.loads(self.out)


def run_cli(argv: Sequence[str]) -> Result:
    """`ckpt-doctor ARGV…`; argparse's usage errors become exit code 2, as in a shell."""
    from ckpt_doctor.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as e:
            rc = int(e.code or 0)
    return Result(rc, out.getvalue(), err.getvalue())

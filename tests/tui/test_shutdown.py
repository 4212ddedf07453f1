"""Quitting or refreshing while a bundle is still being read never hangs or prints a traceback."""

from __future__ import annotations

import threading
from pathlib import Path

from ckpt_doctor.errors import InputError
from ckpt_doctor.tui.source import Superseded, make_loader
from ckpt_doctor.tui.target import Target

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lexical-sort-older"


def test_close_while_reading_wakes_waiters_without_a_traceback() -> None:
    errors: list[BaseException] = []
    old_hook = threading.excepthook
    threading.excepthook = lambda args: errors.append(args.exc_value)  # a thread traceback would land here
    try:
        for _ in range(5):
            loader = make_loader(Target(bundle=EXAMPLE))
            run = loader._current()  # the child process reading the bundle

            def waiter(run=run) -> None:
                try:
                    run.wait(lambda: False)  # only the stop (or a fatal error) can end this wait
                except (InputError, Superseded):
                    pass

            t = threading.Thread(target=waiter)
            t.start()
            loader.close()  # before the child has necessarily sent anything
            loader.close()  # closing twice is harmless
            t.join(timeout=20)
            assert not t.is_alive(), "a waiter stayed blocked after close()"
    finally:
        threading.excepthook = old_hook
    assert errors == []

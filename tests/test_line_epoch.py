"""When a log line was written, to the fraction of a second its stamp shows (facts.logs.line_epoch): what
final-checkpoint-missing compares with checkpoint mtimes. glog writes no year: the run's time gives it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ckpt_doctor.facts.logs import line_epoch


def at(*a: int, us: int = 0) -> float:
    return datetime(*a, microsecond=us, tzinfo=UTC).timestamp()  # type: ignore[misc]


NEAR = at(2026, 12, 2, 1, 0, 0)
GLOG = "W1202 01:05:12.092000 1 torch/distributed/elastic/agent/server/api.py:753] Received 15 death signal"


@pytest.mark.parametrize(
    ("line", "want"),
    [
        (GLOG, at(2026, 12, 2, 1, 5, 12, us=92000)),
        ("[2026-12-02 01:18:47,314] [WARNING] [engine.py:1:x] hi", at(2026, 12, 2, 1, 18, 47, us=314000)),
        ("2026-12-02 01:18:47.5 - INFO - x", at(2026, 12, 2, 1, 18, 47, us=500000)),
        ("[2026-12-02T02:18:47.25+01:00] x", at(2026, 12, 2, 1, 18, 47, us=250000)),
        # a bare zoned RFC 3339 stamp is what kubectl's --timestamps writes: a wrapper's, not used
        ("2026-12-02T02:18:47.25+01:00 x", None),
        # what wraps the line is peeled; the program's own stamp wins over the wrapper's
        ("2026-12-02T09:00:00.000000000Z " + GLOG, at(2026, 12, 2, 1, 5, 12, us=92000)),
        ("[pod/p-0/node] " + GLOG, at(2026, 12, 2, 1, 5, 12, us=92000)),
        ("[rank0]: " + GLOG, at(2026, 12, 2, 1, 5, 12, us=92000)),
        ('{"time": "2026-12-02T09:00:00Z", "msg": "' + GLOG + '"}', at(2026, 12, 2, 1, 5, 12, us=92000)),
        # a wrapper's stamp is not the program's: not used
        ("2026-12-02T01:05:13.5Z [rank: 0] Received SIGTERM: 15", None),
        ('{"time": "2026-12-02T01:05:13.25Z", "msg": "Received SIGTERM"}', None),
        ("[rank: 0] Received SIGTERM: 15", None),
        ("step 25/40 loss 4.8", None),
    ],
)
def test_stamps(line: str, want: float | None) -> None:
    got = line_epoch(line, NEAR)
    assert got == pytest.approx(want) if want is not None else got is None


def test_glog_takes_the_year_of_the_run_across_new_year() -> None:
    line = "I0101 00:00:01.500000 7 train.py:1] x"
    assert line_epoch(line, at(2026, 12, 31, 23, 59, 0)) == pytest.approx(at(2027, 1, 1, 0, 0, 1, us=500000))
    assert line_epoch(line, at(2027, 1, 1, 0, 5, 0)) == pytest.approx(at(2027, 1, 1, 0, 0, 1, us=500000))


def test_glog_far_from_the_run_or_without_it_is_not_read() -> None:
    assert line_epoch(GLOG, at(2026, 6, 1, 0, 0, 0)) is None
    assert line_epoch(GLOG, None) is None

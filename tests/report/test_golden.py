"""Golden files: the Markdown and HTML report of every example bundle.

After an intended change: `CKPT_DOCTOR_UPDATE_GOLDEN=1 pytest tests/report/test_golden.py`, then read the
diff of tests/report/golden/ before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ckpt_doctor.report.incident import render_report
from tests.report.conftest import NAMES, diagnosis

GOLDEN = Path(__file__).parent / "golden"
UPDATE = bool(os.environ.get("CKPT_DOCTOR_UPDATE_GOLDEN"))


def _check(path: Path, text: str) -> None:
    if UPDATE or not path.exists():
        path.write_text(text)
        if not UPDATE:
            pytest.fail(f"{path.name} did not exist: written, look at it and run again")
    assert text == path.read_text(), f"{path.name} changed (CKPT_DOCTOR_UPDATE_GOLDEN=1 to accept)"


def test_every_example_has_goldens() -> None:
    assert len(NAMES) == 16


@pytest.mark.parametrize("name", NAMES)
def test_markdown(name: str) -> None:
    rendered = render_report(diagnosis(name), "markdown", Path("report.md"))
    _check(GOLDEN / f"{name}.md", rendered.text)
    assert set(rendered.beside) <= {"report-chart.svg", "report-chart.png"}


@pytest.mark.parametrize("name", NAMES)
def test_html(name: str) -> None:
    _check(GOLDEN / f"{name}.html", render_report(diagnosis(name), "html").text)


def test_the_same_diagnosis_gives_the_same_bytes() -> None:
    d = diagnosis("lexical-sort-older")
    assert render_report(d, "html").text == render_report(d, "html").text
    a = render_report(d, "markdown", Path("r.md"))
    b = render_report(d, "markdown", Path("r.md"))
    assert a.text == b.text and a.beside["r-chart.svg"] == b.beside["r-chart.svg"]

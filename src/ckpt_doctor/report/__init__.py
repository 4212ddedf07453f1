"""Renderers: one Diagnosis, many faces (text, json, markdown; sarif and junit for lint)."""

from __future__ import annotations

from collections.abc import Callable

from ckpt_doctor.engine.walk import Diagnosis


def renderer(fmt: str) -> Callable[[Diagnosis], str]:
    if fmt == "json":
        from ckpt_doctor.report.jsonout import render
    elif fmt == "markdown":
        from ckpt_doctor.report.markdown import render
    elif fmt == "text":
        from ckpt_doctor.report.text import render
    elif fmt == "sarif":
        from ckpt_doctor.report.sarif import render
    elif fmt == "junit":
        from ckpt_doctor.report.junit import render
    else:
        raise ValueError(f"unknown output format {fmt}")
    return render

"""The findings document of contracts.md §3."""

from __future__ import annotations

import json

from ckpt_doctor.engine.walk import Diagnosis


def render(diag: Diagnosis) -> str:
    return json.dumps(diag.to_json(), indent=2, ensure_ascii=False, default=str) + "\n"

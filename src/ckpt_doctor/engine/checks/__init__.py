"""Check functions: one per rule id, each reading Facts and returning Results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ckpt_doctor.engine.model import Result, Rule
from ckpt_doctor.facts.context import Facts

CheckFn = Callable[[Facts, Rule], "Result | list[Result]"]
CHECKS: dict[str, CheckFn] = {}


def check(rule_id: str) -> Callable[[CheckFn], CheckFn]:
    def register(fn: CheckFn) -> CheckFn:
        if rule_id in CHECKS:
            raise ValueError(f"two checks for {rule_id}")
        CHECKS[rule_id] = fn
        return fn

    return register


def load_checks() -> dict[str, CheckFn]:
    from ckpt_doctor.engine.checks import history, program, runtime, storage, symptoms  # noqa: F401

    return CHECKS


# -- evidence helpers ---------------------------------------------------------------------------
def field_ev(obj: str, path: str, value: Any = None) -> dict[str, Any]:
    return {"type": "field", "object": obj, "path": path, "value": value}


def absence(what: str, where: str | None = None) -> dict[str, Any]:
    ev: dict[str, Any] = {"type": "absence", "what": what}
    if where:
        ev["where"] = where
    return ev


def condition_ev(obj: str, cond: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "condition",
        "object": obj,
        "conditionType": str(cond.get("type")),
        "status": str(cond.get("status")),
        "reason": str(cond.get("reason", "")),
        "message": str(cond.get("message", "")),
    }


def event_ev(f: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "event",
        "object": f["object"],
        "reason": f["reason"],
        "message": f["message"],
        "count": f["count"],
        "lastTimestamp": f["lastTimestamp"],
    }

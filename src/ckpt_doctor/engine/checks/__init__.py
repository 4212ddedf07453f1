"""Check functions: one per rule id, each reading Facts and returning Results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ckpt_doctor.engine.model import Result, Rule
from ckpt_doctor.facts.context import Facts
from ckpt_doctor.scope import event_ev as event_ev  # evidence helpers live beside the event reader

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
    from ckpt_doctor.engine.checks.volume import AUGMENTS, wrap

    for rid in AUGMENTS:  # what the checkpoint listings add, after each rule's own check (once)
        fn = CHECKS.get(rid)
        if fn is not None and not getattr(fn, "_with_listings", False):
            CHECKS[rid] = wrap(rid, fn)
            CHECKS[rid]._with_listings = True  # type: ignore[attr-defined]
    return CHECKS


# -- evidence helpers ---------------------------------------------------------------------------
def field_ev(obj: str, path: str, value: Any = None) -> dict[str, Any]:
    return {"type": "field", "object": obj, "path": path, "value": value}


def exit_code_ev(r: Any) -> dict[str, Any]:
    """The run's exit code, where its pod's status says it (a `Run` of facts/attempts.py)."""
    return field_ev(r.pod.ref(), f"{r.terminated_path}.exitCode", r.exit_code)


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


def snippet(text: str, start: int, end: int, before: int = 120, after: int = 120) -> str:
    """The matched part of `text` with some context, cut at word boundaries, on one line."""
    lo, hi = max(0, start - before), min(len(text), end + after)
    if lo > 0:
        space = text.find(" ", lo, start)
        lo = space + 1 if space != -1 else lo
    if hi < len(text):
        space = text.rfind(" ", end, hi)
        hi = space if space != -1 else hi
    body = " ".join(text[lo:hi].split())
    return ("…" if lo else "") + body + ("…" if hi < len(text) else "")


def text_ev(text: str, start: int, end: int) -> dict[str, Any]:
    return {"type": "text", "text": snippet(text, start, end)}

"""One-line descriptions of evidence items, shared by the text and Markdown renderers."""

from __future__ import annotations

import json
from typing import Any


def _short(v: Any, limit: int = 160) -> str:
    s = v if isinstance(v, str) else json.dumps(v, default=str, ensure_ascii=False)
    s = " ⏎ ".join(part.strip() for part in s.strip().splitlines()) if "\n" in s else s
    return s if len(s) <= limit else s[: limit - 1] + "…"


def describe(ev: dict[str, Any]) -> str:
    t = ev.get("type")
    if t == "field":
        value = ev.get("value")
        return f"{ev.get('object')} {ev.get('path')}" + (f" = {_short(value)}" if value is not None else "")
    if t == "event":
        count = ev.get("count")
        times = f" ×{count}" if count and count != 1 else ""
        return f"event {ev.get('reason')}{times} on {ev.get('object')}: {_short(ev.get('message'))}"
    if t == "log":
        prev = " (previous)" if ev.get("previous") else ""
        line = f":{ev['line']}" if ev.get("line") else ""
        att = f" [attempt {ev['attempt']}]" if ev.get("attempt") is not None else ""
        return f"log {ev.get('pod')}/{ev.get('container')}{prev}{line}{att}: {_short(ev.get('text'))}"
    if t == "condition":
        return (
            f"{ev.get('object')} condition {ev.get('conditionType')}={ev.get('status')}"
            f" reason={ev.get('reason')}: {_short(ev.get('message'))}"
        )
    if t == "file":
        return f"{ev.get('path')}:{ev.get('line', '?')}" + (f": {_short(ev['text'])}" if ev.get("text") else "")
    if t == "absence":
        where = f" in {ev['where']}" if ev.get("where") else ""
        return f"missing: {ev.get('what')}{where}"
    if t == "text":
        return f"error text: {_short(ev.get('text'), 240)}"
    if t == "checkpoint":
        return _checkpoint(ev)
    return _short(ev)


def _checkpoint(ev: dict[str, Any]) -> str:
    """A checkpoint listing's entry: `checkpoint /ckpt/checkpoint-30 (129921 bytes, written …): incomplete, no
    trainer_state.json [listed 2026-… in pod/node]`."""
    facts = []
    if ev.get("size") is not None:
        facts.append(f"{ev['size']} bytes")
    if ev.get("mtime"):
        facts.append(f"written {ev['mtime']}")
    head = f"checkpoint {ev.get('path')}" + (f" ({', '.join(facts)})" if facts else "")
    state = {True: "complete", False: "incomplete"}.get(ev.get("complete"))  # type: ignore[call-overload]
    why = ev.get("why")
    tail = ": " + ", ".join(_short(x) for x in (state, why) if x) if (state or why) else ""
    where = f"{ev.get('pod')}/{ev.get('container')}" if ev.get("pod") else ""
    listed = f" [listed {ev['listedAt']}" + (f" in {where}" if where else "") + "]" if ev.get("listedAt") else (
        f" [in {where}]" if where else "")  # fmt: skip
    return head + tail + listed

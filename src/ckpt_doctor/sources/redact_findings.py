"""Redacting a Diagnosis as it leaves: what every renderer, the app's export and `report` print.

The findings are redacted, not the Snapshot they were judged from: the checks see the real values (two env
values that differ must still compare unequal), and only what is quoted is scanned, which costs little even
for a 1,000-pod job. In place and idempotent, so a face that is unsure may call it again.

- a `field` evidence value is redacted where it stands: the path is resolved in the cited object, the object is
  redacted as a bundle would be, and the value at the same path is taken from the redacted copy (so
  `spec.trainer.env[name=HF_TOKEN]` keeps its path and shows `<redacted:env>`; an args item after `--api-key`
  is redacted because of the item before it); a value whose path cannot be resolved is judged by the name at
  the end of its path and by its shape;
- every other string (log lines, event and condition messages, lint's quoted file lines, details, reasons,
  fixes, notes, what was not collected) goes through the text redactor, which also replaces every credential
  the objects in scope hold by name, wherever it is repeated (a lint line `value: hunter2-Planted`, a log line
  that echoes a password).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ckpt_doctor.snapshot import Gap, Obj, Snapshot
from ckpt_doctor.sources.redact_names import credential_position

if TYPE_CHECKING:
    from ckpt_doctor.engine.walk import Diagnosis
    from ckpt_doctor.sources.redact import Redactor

_SEGMENT = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")
_MISSING = object()


def parse_path(path: str) -> list[tuple[str, str]]:
    """`spec.trainer.env[name=HF_TOKEN].value` → [("key","spec"), …, ("select","name=HF_TOKEN"), ("key","value")]."""
    out: list[tuple[str, str]] = []
    for m in _SEGMENT.finditer(path[:1024]):
        if m.group(1) is not None:
            out.append(("key", m.group(1)))
        else:
            out.append(("select", m.group(2)))
    return out


def resolve(value: Any, segments: list[tuple[str, str]]) -> Any:
    """The value at `segments` inside a JSON-shaped `value`, or _MISSING."""
    cur = value
    for kind, seg in segments:
        if kind == "key":
            if not isinstance(cur, dict) or seg not in cur:
                return _MISSING
            cur = cur[seg]
            continue
        if isinstance(cur, list):
            if seg.isdigit():
                i = int(seg)
                if i >= len(cur):
                    return _MISSING
                cur = cur[i]
                continue
            k, eq, want = seg.partition("=")
            if not eq:
                k, want = "name", seg  # containers[node]
            hit = [x for x in cur if isinstance(x, dict) and str(x.get(k)) == want]
            if len(hit) != 1:
                return _MISSING
            cur = hit[0]
        elif isinstance(cur, dict) and seg in cur:
            cur = cur[seg]
        else:
            return _MISSING
    return cur


def _tail_name(segments: list[tuple[str, str]]) -> str | None:
    """The name a value at this path is known by: `env[name=X]` → X, `annotations[a/b-token]` → a/b-token."""
    for kind, seg in reversed(segments):
        if kind == "select":
            k, eq, want = seg.partition("=")
            if eq and k == "name":
                return want
            if not eq and not seg.isdigit():
                return seg
            if seg.isdigit():
                continue
            return None
        if seg != "value":
            return seg
    return None


class _Cited:
    """The objects evidence cites, by `Kind/namespace/name`, each redacted once when first needed. Indexed a kind
    at a time, when first cited (the snapshot's index by kind: a bundle's 20,000 events are not walked to find a
    pod)."""

    def __init__(self, snap: Snapshot, r: Redactor) -> None:
        self._snap = snap
        self._r = r
        self._index: dict[str, dict[str, Obj]] = {}
        self._redacted: dict[str, Any] = {}

    def raw(self, ref: str) -> Any:
        kind = ref.split("/", 1)[0]
        by_ref = self._index.get(kind)
        if by_ref is None:
            by_ref = self._index[kind] = {}
            for o in self._snap.of_kind(kind):  # in the snapshot's order: the first of a ref is the one cited
                by_ref.setdefault(o.ref(), o)
        o = by_ref.get(ref)
        return None if o is None else o.raw

    def redacted(self, ref: str) -> Any:
        if ref not in self._redacted:
            raw = self.raw(ref)
            self._redacted[ref] = None if raw is None else self._r.obj(raw)
        return self._redacted[ref]


def _field_value(ev: dict[str, Any], cited: _Cited, r: Redactor) -> Any:
    value = ev.get("value")
    if value is None or isinstance(value, bool | int | float):
        return value
    segments = parse_path(str(ev.get("path") or ""))
    ref = str(ev.get("object") or "")
    raw = cited.raw(ref) if ref else None
    if raw is not None and segments:
        at = resolve(raw, segments)
        if at is not _MISSING:
            red = resolve(cited.redacted(ref), segments)
            if at == value and red is not _MISSING:
                return red
            if isinstance(at, dict) and isinstance(red, dict) and isinstance(value, str):
                for k, v in at.items():  # the path names an item ({name, value}); the value is one of its fields
                    if v == value and k in red:
                        return red[k]
    if isinstance(value, str):
        name = _tail_name(segments)
        if name and value and credential_position(name, value):
            r._add("by-name")
            r._remember(value)
            return "<redacted:by-name>"
        return r._string(value)
    return r.obj(value)


def scope_objects(diag: Diagnosis) -> list[Obj]:
    sc = diag.facts.scope
    if sc.trainjob is None:  # lint: the manifests read
        return list(sc.snap.objects)
    objs: list[Obj | None] = [sc.trainjob, sc.runtime, sc.jobset, *sc.jobs, *sc.pods]
    objs += [*sc.pvcs.values(), *sc.pvs.values(), *sc.storageclasses.values(), *sc.nodes.values()]
    objs += [*sc.workloads, *sc.configmaps.values()]
    return [o for o in objs if o is not None]


def learn_from(o: Obj, r: Redactor) -> None:
    """What an object holds by name (its spec, data and annotations; status holds no configuration)."""
    raw = o.raw
    if not isinstance(raw, dict):
        return
    r.learn({k: v for k, v in raw.items() if k not in ("status", "metadata")})
    meta = raw.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict):
        r.learn(meta["annotations"])


def redact_diagnosis(diag: Diagnosis, r: Redactor) -> Diagnosis:
    if not r.enabled or diag.__dict__.get("_redacted"):
        return diag
    for o in scope_objects(diag):
        learn_from(o, r)
    cited = _Cited(diag.facts.scope.snap, r)
    for f in diag.findings:
        res = f.result
        evidence = []
        for ev in res.evidence:
            ev = dict(ev)
            if ev.get("type") == "field" and "value" in ev:
                ev["value"] = _field_value(ev, cited, r)
            evidence.append({k: (v if k == "value" and ev.get("type") == "field" else r.obj(v)) for k, v in ev.items()})
        res.evidence = evidence
        res.detail = r.text(res.detail) if res.detail else res.detail
        res.reason = r.text(res.reason) if res.reason else res.reason
        res.fix = r.text(res.fix) if res.fix else res.fix
        if res.subject:
            res.subject = r.obj(res.subject)
    snap = diag.facts.scope.snap
    snap.not_collected = [Gap(g.what, r.text(g.reason)) for g in snap.not_collected]
    snap.notes[:] = [r.text(n) for n in snap.notes]
    diag.__dict__["_redacted"] = True
    return diag

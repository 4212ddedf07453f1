"""A drill playbook as data (`playbooks/verify-resume.yaml`): load it, check it, choose its steps."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ckpt_doctor.data import playbooks_dir
from ckpt_doctor.errors import InputError, UsageError
from ckpt_doctor.yamlio import iter_documents

# the actions the runner knows, and whether each may write to the cluster
ACTIONS: dict[str, bool] = {
    "preflight": False,
    "submit": True,
    "wait-for-checkpoint": False,
    "crash": True,
    "suspend-resume": True,
    "cross-node": True,
    "cleanup": True,
}
# steps that must run whatever --steps / --skip say: without them the drill is not safe
ALWAYS = ("submit", "cleanup")
DEFAULT = "verify-resume"


@dataclass(frozen=True)
class Step:
    id: str
    title: str
    why: str
    action: str
    changes: bool
    expect: str
    timeout: float  # seconds
    on_fail: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    # a required step must run and pass for the drill to pass (contracts.md §5); an optional one (preflight
    # in verify-resume: it predicts, the interruptions prove) may be skipped or degrade with a note
    required: bool = True

    def param(self, name: str, default: Any) -> Any:
        return self.params.get(name, default)


@dataclass(frozen=True)
class Playbook:
    id: str
    title: str
    steps: tuple[Step, ...]
    poll: float = 2.0  # seconds between two looks of a wait
    source: str = ""

    def step(self, sid: str) -> Step:
        return next(s for s in self.steps if s.id == sid)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.steps)

    def scaled(self, factor: float) -> Playbook:
        """Every timeout (and the poll interval) times `factor` (tests use small ones)."""
        steps = tuple(replace(s, timeout=s.timeout * factor) for s in self.steps)
        return replace(self, steps=steps, poll=max(0.005, self.poll * factor))


def default_path() -> Path:
    return playbooks_dir() / f"{DEFAULT}.yaml"


def load_playbook(path: str | Path | None = None) -> Playbook:
    """Read and check a playbook (the packaged verify-resume one by default); InputError when it is wrong."""
    p = Path(path) if path is not None else default_path()
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot read the playbook: {e.strerror}", str(p)) from None
    docs = [d for d in iter_documents(text, str(p)) if d is not None]
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise InputError("a playbook is one YAML mapping (apiVersion, kind: Playbook, id, steps)", str(p))
    return parse_playbook(docs[0], str(p))


def parse_playbook(doc: dict[str, Any], where: str = "playbook") -> Playbook:
    def bad(msg: str) -> InputError:
        return InputError(msg, where)

    if doc.get("kind") != "Playbook":
        raise bad(f"kind must be Playbook, not {doc.get('kind')!r}")
    if not isinstance(doc.get("id"), str) or not doc["id"]:
        raise bad("id is missing")
    raw_steps = doc.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise bad("steps must be a non-empty list")
    known_rules = _rule_ids()
    steps: list[Step] = []
    for i, rs in enumerate(raw_steps):
        at = f"steps[{i}]"
        if not isinstance(rs, dict):
            raise bad(f"{at} is not a mapping")
        for key in ("id", "title", "why", "action", "expect"):
            if not isinstance(rs.get(key), str) or not rs[key].strip():
                raise bad(f"{at}.{key} is missing or not text")
        sid, action = rs["id"], rs["action"]
        if action not in ACTIONS:
            raise bad(f"{at} ({sid}): unknown action {action!r}; known: {', '.join(ACTIONS)}")
        if any(s.id == sid for s in steps):
            raise bad(f"{at}: step id {sid!r} is used twice")
        timeout = rs.get("timeoutSeconds")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise bad(f"{at} ({sid}): timeoutSeconds must be a positive number")
        changes = rs.get("changes", ACTIONS[action])
        if not isinstance(changes, bool):
            raise bad(f"{at} ({sid}): changes must be true or false")
        if changes != ACTIONS[action]:
            raise bad(f"{at} ({sid}): action {action} {'writes' if ACTIONS[action] else 'only reads'}; "
                      f"changes: {str(ACTIONS[action]).lower()}")
        on_fail = rs.get("onFail") or []
        if not isinstance(on_fail, list) or not all(isinstance(r, str) for r in on_fail):
            raise bad(f"{at} ({sid}): onFail must be a list of rule ids")
        unknown = [r for r in on_fail if r not in known_rules]
        if unknown:
            raise bad(f"{at} ({sid}): onFail names rules the catalogue does not have: {', '.join(unknown)}")
        params = rs.get("params") or {}
        if not isinstance(params, dict):
            raise bad(f"{at} ({sid}): params must be a mapping")
        required = rs.get("required", True)
        if not isinstance(required, bool):
            raise bad(f"{at} ({sid}): required must be true or false")
        if action in ALWAYS and not required:
            raise bad(f"{at} ({sid}): a {action} step is always required")
        steps.append(
            Step(
                sid,
                " ".join(rs["title"].split()),
                " ".join(rs["why"].split()),
                action,
                changes,
                " ".join(rs["expect"].split()),
                float(timeout),
                tuple(on_fail),
                dict(params),
                required,
            )
        )
    actions = [s.action for s in steps]
    for needed in ALWAYS:
        if needed not in actions:
            raise bad(f"a drill playbook needs a {needed} step")
    if actions[-1] != "cleanup":
        raise bad("the cleanup step must come last")
    if actions.index("submit") > min(
        (actions.index(a) for a in ("wait-for-checkpoint", "crash", "suspend-resume", "cross-node") if a in actions),
        default=len(actions),
    ):
        raise bad("the submit step must come before the steps that need a running trainer")
    poll = doc.get("pollSeconds", 2)
    if isinstance(poll, bool) or not isinstance(poll, int | float) or poll <= 0:
        raise bad("pollSeconds must be a positive number")
    return Playbook(doc["id"], " ".join(str(doc.get("title") or doc["id"]).split()), tuple(steps), float(poll), where)


def _rule_ids() -> set[str]:
    from ckpt_doctor.engine.catalogue import default_rules

    return {r.id for r in default_rules()}


def choose_steps(pb: Playbook, only: Sequence[str] = (), skip: Sequence[str] = ()) -> tuple[set[str], list[str]]:
    """The ids of the steps to run, from --steps and --skip, and notes on what was forced or left out.

    The submit (or attach) and cleanup steps always run; skipping one is a usage error."""
    ids = set(pb.ids)
    wanted = _split(only)
    skipped = _split(skip)
    for name, given in (("--steps", wanted), ("--skip", skipped)):
        unknown = [s for s in given if s not in ids]
        if unknown:
            raise UsageError(f"{name}: unknown step {', '.join(unknown)}; the steps are {', '.join(pb.ids)}")
    forced = [s.id for s in pb.steps if s.action in ALWAYS]
    bad = [s for s in skipped if s in forced]
    if bad:
        raise UsageError(f"--skip {', '.join(bad)}: the drill always runs {' and '.join(forced)}")
    chosen = set(wanted) if wanted else set(ids)
    notes = []
    added = [s for s in forced if s not in chosen]
    if wanted and added:
        notes.append(f"also running {', '.join(added)} (every drill submits or attaches, and cleans up)")
    chosen |= set(forced)
    chosen -= set(skipped)
    return chosen, notes


def _split(values: Iterable[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out

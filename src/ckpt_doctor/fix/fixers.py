"""One function per mechanical fix: (file text, subject, finding, version) -> new text or None.

Each re-reads the object it is given from the text (so fixes can run one after another on the
same file), checks the problem is really there, and edits only the lines that must change.
None means "nothing to do"; NotMechanical means a human has to decide.
"""

from __future__ import annotations

import copy
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString

from ckpt_doctor.engine.model import Finding
from ckpt_doctor.facts.exec_advice import exec_obstacle
from ckpt_doctor.facts.overrides import find_trainer_job
from ckpt_doctor.facts.versions import TrainerVersion
from ckpt_doctor.fix.yamledit import (
    NotMechanical,
    Style,
    append_items,
    detect_style,
    ensure_path,
    indent_width,
    insert_at,
    insert_entry,
    insert_seq_block,
    parse,
    remove_entry,
    remove_item,
    replace_entry,
    seq_block,
    set_scalar,
)
from ckpt_doctor.scope import ANCESTOR_LABEL, TRAINER_CONTAINER
from ckpt_doctor.snapshot import Obj
from ckpt_doctor.sources.manifests import plain, value_line

MAX_RESTARTS = 3
MANAGER = "ckpt-doctor.local/overrides"
RESERVED_ENV_DEST = {
    "node": ["trainer", "env"],
    "dataset-initializer": ["initializer", "dataset", "env"],
    "model-initializer": ["initializer", "model", "env"],
}
WHAT = {
    "env-in-pod-template-overrides": "moved env from the overrides to spec.trainer.env",
    "override-field-unsupported": "rewrote the overrides as spec.runtimePatches",
    "missing-ancestor-label": f"added {ANCESTOR_LABEL}: trainer to the trainer Job template",
    "no-failure-policy": f"added failurePolicy.maxRestarts: {MAX_RESTARTS} (and backoffLimit: 0 on the trainer job)",
    "backoff-limit-fights-restarts": "set backoffLimit: 0 on the trainer job",
    "sigterm-not-forwarded": "put `exec` before the trainer command",
}


# -- finding the object again -------------------------------------------------------------------
def _objects(node: Any) -> list[Any]:
    if isinstance(node, list):
        return [o for item in node for o in _objects(item)]
    if not isinstance(node, dict):
        return []
    if str(node.get("kind", "")).endswith("List") and isinstance(node.get("items"), list):
        return _objects(node["items"])
    return [node] if node.get("kind") and node.get("apiVersion") else []


def _load(text: str, subject: dict[str, Any]) -> tuple[CommentedMap, Style]:
    docs = parse(text)
    for d in docs:
        for o in _objects(d):
            meta = o.get("metadata") or {}
            if (
                o.get("kind") == subject.get("kind")
                and str(meta.get("name", "")) == subject.get("name")
                and (str(meta["namespace"]) if meta.get("namespace") else None) == subject.get("namespace")
            ):
                return o, detect_style(docs)
    raise NotMechanical(f"{subject.get('kind')} {subject.get('name')!r} is no longer in the file")


def _map(node: Any, *keys: str) -> CommentedMap:
    cur = node
    for k in keys:
        cur = cur.get(k) if isinstance(cur, dict) else None
    if not isinstance(cur, CommentedMap):
        raise NotMechanical(f"{'.'.join(keys)} is missing or not a mapping")
    return cur


def _trainer_rjob(obj: CommentedMap) -> CommentedMap:
    rjs = _map(obj, "spec", "template", "spec").get("replicatedJobs")
    if not isinstance(rjs, CommentedSeq) or not len(rjs):
        raise NotMechanical("the runtime has no replicatedJobs")
    tj = find_trainer_job(Obj(plain(obj)))
    if tj is None or tj.index is None:
        raise NotMechanical("no trainer replicated job")
    rj = rjs[tj.index]
    if not isinstance(rj, CommentedMap):
        raise NotMechanical("the trainer replicated job is not a mapping")
    return rj


# -- missing-ancestor-label ---------------------------------------------------------------------
def add_ancestor_label(text: str, subject: dict[str, Any], finding: Finding, version: TrainerVersion) -> str | None:
    obj, style = _load(text, subject)
    tmpl = _map(_trainer_rjob(obj), "template")
    new = ensure_path(text, tmpl, ["metadata", "labels", ANCESTOR_LABEL], "trainer", style, {"metadata": "spec"})
    if new is not None:
        return new
    labels = _map(tmpl, "metadata", "labels")
    if str(labels.get(ANCESTOR_LABEL)) != "trainer":
        return set_scalar(text, labels, ANCESTOR_LABEL, "trainer")
    return None


# -- no-failure-policy / backoff-limit-fights-restarts ------------------------------------------
def add_failure_policy(text: str, subject: dict[str, Any], finding: Finding, version: TrainerVersion) -> str | None:
    obj, style = _load(text, subject)
    js = _map(obj, "spec", "template", "spec")
    fp = js.get("failurePolicy")
    restarts = CommentedMap([("maxRestarts", MAX_RESTARTS)])
    if "failurePolicy" not in js:
        new = insert_entry(text, js, "failurePolicy", restarts, style, before="replicatedJobs")
    elif not isinstance(fp, CommentedMap) or not len(fp):
        new = replace_entry(text, js, "failurePolicy", "failurePolicy", restarts, style)
    elif "maxRestarts" not in fp:
        new = insert_entry(text, fp, "maxRestarts", MAX_RESTARTS, style)
    elif not isinstance(fp["maxRestarts"], int) or fp["maxRestarts"] < 1:
        new = set_scalar(text, fp, "maxRestarts", str(MAX_RESTARTS))
    else:
        return None
    try:
        return zero_backoff_limit(new, subject, finding, version) or new
    except NotMechanical:
        return new


def zero_backoff_limit(text: str, subject: dict[str, Any], finding: Finding, version: TrainerVersion) -> str | None:
    obj, style = _load(text, subject)
    job_spec = _map(_trainer_rjob(obj), "template", "spec")
    bl = job_spec.get("backoffLimit")
    if "backoffLimit" not in job_spec:
        return insert_entry(text, job_spec, "backoffLimit", 0, style, before="template")
    if isinstance(bl, int) and bl == 0:
        return None
    return set_scalar(text, job_spec, "backoffLimit", "0")


# -- env-in-pod-template-overrides --------------------------------------------------------------
def _env_overrides(spec: CommentedMap) -> list[tuple[list[tuple[Any, Any]], CommentedSeq, int, str]]:
    """(chain of (mapping, key) from the override item down to `containers`, the list, index, name)."""
    out = []

    def scan(chain: list[tuple[Any, Any]], pod: Any) -> None:
        if not isinstance(pod, CommentedMap):
            return
        for kind in ("containers", "initContainers"):
            seq = pod.get(kind)
            if not isinstance(seq, CommentedSeq):
                continue
            for i, c in enumerate(seq):
                if isinstance(c, CommentedMap) and c.get("env") and c.get("name") in RESERVED_ENV_DEST:
                    out.append(([*chain, (pod, kind)], seq, i, str(c["name"])))

    for ov in spec.get("podSpecOverrides") or []:
        scan([], ov)
    for ov in spec.get("podTemplateOverrides") or []:
        if isinstance(ov, CommentedMap):
            scan([(ov, "spec")], ov.get("spec"))
    for p in spec.get("runtimePatches") or []:
        try:
            rjs = _map(p, "trainingRuntimeSpec", "template", "spec").get("replicatedJobs") or []
        except NotMechanical:
            continue
        for rj in rjs:
            try:
                t = _map(rj, "template")
                s = _map(t, "spec")
                pt = _map(s, "template")
            except NotMechanical:
                continue
            scan([(rj, "template"), (t, "spec"), (s, "template"), (pt, "spec")], pt.get("spec"))
    return out


def _get(node: Any, path: list[str]) -> Any:
    cur = node
    for k in path:
        cur = cur.get(k) if isinstance(cur, dict) else None
    return cur


def move_env_to_trainer(text: str, subject: dict[str, Any], finding: Finding, version: TrainerVersion) -> str | None:
    changed = False
    for _ in range(64):
        obj, style = _load(text, subject)
        spec = _map(obj, "spec")
        hits = _env_overrides(spec)
        if not hits:
            break
        container = hits[0][1][hits[0][2]]
        text = _add_env(text, spec, container, RESERVED_ENV_DEST[hits[0][3]], style)
        obj, style = _load(text, subject)
        chain, seq, idx, _name = _env_overrides(_map(obj, "spec"))[0]
        text = _drop_env(text, chain, seq, idx, seq[idx])
        changed = True
    return _drop_empty_overrides(text, subject) if changed else None


def _add_env(text: str, spec: CommentedMap, container: CommentedMap, dest: list[str], style: Style) -> str:
    """Add the container's env to spec[dest]; variables spec[dest] already sets keep its value."""
    have = _get(spec, dest)
    names = {str(e.get("name")) for e in have or [] if isinstance(e, dict)}
    moving = [copy.deepcopy(e) for e in container["env"] if isinstance(e, dict) and str(e.get("name")) not in names]
    if not moving:
        return text
    overrides = next((k for k in ("podSpecOverrides", "podTemplateOverrides", "runtimePatches") if k in spec), None)
    if len(moving) == len(container["env"]):
        try:  # move the lines themselves, so comments between the variables come along
            block, col = seq_block(text, container, "env")
            return insert_seq_block(text, spec, dest, block, col, style, overrides)
        except NotMechanical:
            pass
    if isinstance(have, CommentedSeq) and len(have) and not have.fa.flow_style():
        return append_items(text, have, moving, style)
    if have is not None:
        merged = CommentedSeq([*list(have), *moving])
        return replace_entry(text, _map(spec, *dest[:-1]), dest[-1], dest[-1], merged, style)
    new = ensure_path(text, spec, dest, CommentedSeq(moving), style, {dest[0]: overrides or ""})
    return new if new is not None else text


def _drop_env(text: str, chain: list[tuple[Any, Any]], seq: CommentedSeq, idx: int, container: CommentedMap) -> str:
    if any(k not in ("name", "env") for k in container):
        return remove_entry(text, container, "env")
    if len(seq) > 1:
        return remove_item(text, seq, idx)
    # the container entry held only env: drop the list, and the mappings that would be left empty
    level = len(chain) - 1
    while level > 0 and len(chain[level][0]) == 1:
        level -= 1
    mapping, key = chain[level]
    return remove_entry(text, mapping, key)


def _drop_empty_overrides(text: str, subject: dict[str, Any]) -> str:
    """Overrides left with nothing but the jobs they target (their env moved away) go, and the list with them
    when it is left empty: an override that changes nothing is noise, and would become an empty patch."""
    for _ in range(64):
        obj, _style = _load(text, subject)
        spec = _map(obj, "spec")
        for key in ("podTemplateOverrides", "podSpecOverrides"):
            seq = spec.get(key)
            if not isinstance(seq, CommentedSeq):
                continue
            idle = [i for i, ov in enumerate(seq) if isinstance(ov, CommentedMap) and set(ov) <= {"targetJobs"}]
            if not idle:
                continue
            text = remove_entry(text, spec, key) if len(idle) == len(seq) else remove_item(text, seq, idle[0])
            break
        else:
            return text
    return text


# -- override-field-unsupported -----------------------------------------------------------------
def _patch(manager: str, targets: list[str], pod_meta: Any, pod_spec: Any, js_meta: Any) -> CommentedMap:
    rjobs = CommentedSeq()
    for i, name in enumerate(targets):
        pod_tmpl = CommentedMap()
        if pod_meta:
            pod_tmpl["metadata"] = pod_meta if i == 0 else copy.deepcopy(pod_meta)
        if pod_spec:
            pod_tmpl["spec"] = pod_spec if i == 0 else copy.deepcopy(pod_spec)
        job = CommentedMap([("spec", CommentedMap([("template", pod_tmpl)]))])
        rjobs.append(CommentedMap([("name", name), ("template", job)]))
    tmpl = CommentedMap()
    if js_meta:
        tmpl["metadata"] = js_meta
    if len(rjobs):
        tmpl["spec"] = CommentedMap([("replicatedJobs", rjobs)])
    return CommentedMap([("manager", manager), ("trainingRuntimeSpec", CommentedMap([("template", tmpl)]))])


def overrides_to_runtime_patches(
    text: str, subject: dict[str, Any], finding: Finding, version: TrainerVersion
) -> str | None:
    obj, style = _load(text, subject)
    spec = _map(obj, "spec")
    if not version.at_least("v2.2"):
        shape = {"v2.1": "podTemplateOverrides", "v2.0": "podSpecOverrides"}.get(version.version, "older")
        raise NotMechanical(
            f"Trainer {version.version} has no such field: write the overrides in the {shape} shape by hand "
            "(or lint with the --trainer-version the cluster really runs)"
        )
    old = [k for k in ("podTemplateOverrides", "podSpecOverrides") if k in spec]
    meta_keys = [k for k in ("labels", "annotations") if k in spec]
    if not old and not meta_keys and not any(k in spec for k in ("activeDeadlineSeconds", "runtimePatches")):
        return None  # an earlier fix (the env moved to spec.trainer.env) took the last such field away
    if not old and not meta_keys:
        raise NotMechanical(
            f"Trainer {version.version} lacks a field used here (activeDeadlineSeconds needs v2.2, "
            "terminationGracePeriodSeconds in runtimePatches v2.3): drop it, or set the grace period in the runtime"
        )
    items: list[tuple[list[str], Any, Any]] = []
    for key in old:
        for ov in spec[key] or []:
            if not isinstance(ov, CommentedMap):
                raise NotMechanical(f"an entry of spec.{key} is not a mapping")
            targets = [str(t.get("name")) for t in ov.get("targetJobs") or [] if isinstance(t, dict) and t.get("name")]
            if not targets:
                raise NotMechanical(f"an entry of spec.{key} has no targetJobs")
            if key == "podTemplateOverrides":
                items.append((targets, ov.get("metadata"), ov.get("spec")))
            else:
                pod = CommentedMap([(k, v) for k, v in ov.items() if k != "targetJobs"])
                items.append((targets, None, pod))
    js_meta = CommentedMap([(k, spec[k]) for k in meta_keys]) if meta_keys else None
    existing = spec.get("runtimePatches")
    taken = {str(p.get("manager")) for p in existing or [] if isinstance(p, dict)}
    patches = []
    count = max(1, len(items))
    for i in range(count):
        targets, pod_meta, pod_spec = items[i] if items else ([], None, None)
        manager = MANAGER if count == 1 else f"{MANAGER}-{i}"
        while manager in taken:
            manager += "-x"
        taken.add(manager)
        patches.append(_patch(manager, targets, pod_meta, pod_spec, js_meta if i == 0 else None))
    if isinstance(existing, CommentedSeq) and len(existing) and not existing.fa.flow_style():
        text = append_items(text, existing, patches, style)
        remove = old + meta_keys
    else:
        first = (old + meta_keys)[0]
        text = replace_entry(text, spec, first, "runtimePatches", CommentedSeq(patches), style)
        remove = [k for k in old + meta_keys if k != first]
    for key in remove:
        obj, style = _load(text, subject)
        text = remove_entry(text, _map(obj, "spec"), key)
    return text


# -- sigterm-not-forwarded ----------------------------------------------------------------------
def _script_nodes(obj: CommentedMap) -> list[tuple[CommentedSeq, int]]:
    holders: list[Any] = []
    if obj.get("kind") == "TrainJob":
        holders.append(_get(obj, ["spec", "trainer"]))
    else:
        pod = _get(_trainer_rjob(obj), ["template", "spec", "template", "spec"]) or {}
        holders += [c for c in pod.get("containers") or [] if isinstance(c, dict)]
        holders.sort(key=lambda c: c.get("name") != TRAINER_CONTAINER)
    out = []
    for h in holders:
        if not isinstance(h, dict):
            continue
        for key in ("command", "args"):
            seq = h.get(key)
            if isinstance(seq, CommentedSeq):
                out += [(seq, i) for i, v in enumerate(seq) if isinstance(v, str) and ("\n" in v or " " in v)]
    return out


def exec_trainer(text: str, subject: dict[str, Any], finding: Finding, version: TrainerVersion) -> str | None:
    obj, _style = _load(text, subject)
    snippet = next((str(e["value"]) for e in finding.result.evidence if isinstance(e.get("value"), str)), "")
    found = [(seq, i) for seq, i in _script_nodes(obj) if snippet and snippet.strip() in str(seq[i])]
    if not found:
        raise NotMechanical("could not find the shell script in the manifest")
    seq, i = found[0]
    script = str(seq[i])
    from ckpt_doctor.facts.program.shell import parse_shell

    prog = parse_shell(script)
    cmd = prog.trainer()
    if cmd is None:
        raise NotMechanical("no command that starts training was found in the script")
    if cmd.exec_:
        return None
    # a nested shell, a pipeline, `&`, an assignment, or inside if/for/a function (after `&&` is fine): the
    # same words as the finding's fix (facts/exec_advice.py)
    obstacle = exec_obstacle(cmd)
    if obstacle:
        raise NotMechanical(obstacle)
    last = prog.last_command()
    if last is not cmd:
        shown = (last.text if last is not None else "the end of the script")[:60]
        raise NotMechanical(f"the last command is `{shown}`, not the trainer: make the trainer last and exec it")
    first = cmd.text.split()[0]
    if cmd.col is None:
        raise NotMechanical("the trainer command starts on a continuation line")
    vline = value_line(seq, i)
    if vline is None:
        raise NotMechanical("no position for the script")
    lines = text.splitlines(keepends=True)
    value = seq[i]
    if isinstance(value, FoldedScalarString):
        raise NotMechanical("the script is a folded (>) block: add exec by hand")
    if isinstance(value, LiteralScalarString):
        script_lines = script.split("\n")
        k0 = next(k for k, s in enumerate(script_lines) if s.strip())
        indent = indent_width(lines[vline + k0]) - indent_width(script_lines[k0])
        row, col = vline + cmd.line, indent + cmd.col
    else:
        if "\n" in script:
            raise NotMechanical("the script is a multi-line quoted string: add exec by hand")
        row = vline - 1
        needle = script[cmd.col :][:40]
        start = lines[row].find(needle)
        if start < 0 or lines[row].count(needle) != 1:
            raise NotMechanical("could not place exec in the quoted script")
        col = start
    if not lines[row][col:].startswith(first):
        raise NotMechanical("could not place exec in the script")
    new = insert_at(text, row, col, "exec ")
    check, _s = _load(new, subject)
    after = [str(s[j]) for s, j in _script_nodes(check)]
    expected = _with_exec(script, cmd.line, cmd.col)
    if expected not in after:
        raise NotMechanical("adding exec would change more than the command")
    return new


def _with_exec(script: str, line: int, col: int) -> str:
    rows = script.split("\n")
    rows[line] = rows[line][:col] + "exec " + rows[line][col:]
    return "\n".join(rows)

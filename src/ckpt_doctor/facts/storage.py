"""Where the checkpoint directory really lives (contracts.md §6, "The checkpoint directory").

Found from env (`CKPT_DIR`, `OUTPUT_DIR`, ...), args and framework configuration
(`output_dir`, `--save`, `ckpt_output_dir`), resolved against `workingDir`, then against the
container's volume mounts and the volume behind the mount (PVC → PV → StorageClass).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from ckpt_doctor.facts.program import TrainerSpec
from ckpt_doctor.facts.program.model import Program
from ckpt_doctor.scope import Scope
from ckpt_doctor.snapshot import Obj

# volume sources whose data outlives the pod and its node (what a checkpoint must be written to)
PERSISTENT_SOURCES = ("persistentVolumeClaim", "nfs", "cephfs", "glusterfs", "iscsi", "rbd", "azureFile")

CKPT_ENV = (
    "CKPT_DIR",
    "CHECKPOINT_DIR",
    "CKPT_PATH",
    "CHECKPOINT_PATH",
    "SAVE_DIR",
    "CKPT_OUTPUT_DIR",
    "OUTPUT_DIR",
    "OUTPUT_PATH",
)
DYNAMIC_RX = re.compile(
    r"\$[{(]?(?:HOSTNAME|POD_NAME|RANDOM|MY_POD_NAME)[})]?|"
    r"\$\((?:hostname|date|uuidgen|cat /proc/sys/kernel/random/uuid)[^)]*\)|`(?:hostname|date)[^`]*`|"
    r"<fieldRef:metadata\.(?:name|uid)>|time\.time\(\)|datetime\.now\(\)|uuid4\(\)"
)
NODE_LOCAL_PROVISIONERS = (
    "kubernetes.io/no-provisioner",
    "topolvm",
    "openebs.io/local",
    "local.csi",
    "rancher.io/local-path",
    "local-path",
    "hostpath",
    "lvm.csi",
    "local-storage",
)


@dataclass
class CkptDir:
    raw: str  # as written
    path: str | None  # absolute, variables expanded; None when unresolvable
    source: str  # "env CKPT_DIR", "arg --output_dir", "config output_dir"
    evidence: dict[str, Any]
    dynamic: str | None = None  # the per-pod / per-time part, if any
    mount_path: str | None = None
    volume_name: str | None = None
    volume_kind: str = "container-fs"  # pvc | emptyDir | hostPath | ephemeral | configMap | network | container-fs
    claim: str | None = None
    pvc: Obj | None = None
    pv: Obj | None = None
    storageclass: Obj | None = None
    node_local: str | None = None  # why the storage is pinned to one node
    node_local_ev: dict[str, Any] | None = None  # the field that shows it (PV, StorageClass or claim)
    unresolved: str | None = None  # the value as far as it could be expanded, when some part could not
    notes: list[str] = field(default_factory=list)

    @property
    def persistent(self) -> bool:
        return self.volume_kind in ("pvc", "network") and self.node_local is None


ARG_KEYS = (
    "output_dir",
    "output-dir",
    "save",
    "save_dir",
    "save-dir",
    "ckpt_output_dir",
    "ckpt-output-dir",
    "checkpoint_dir",
    "checkpoint-dir",
    "ckpt_dir",
    "ckpt-dir",
)
CONFIG_KEYS = ("output_dir", "ckpt_output_dir", "checkpointer.output_dir", "checkpoint_dir", "save", "default_root_dir")
# keyword arguments that name the checkpoint directory, per call the Python reader records
CALL_KEYS = {
    "TrainingArguments": ("output_dir",),
    "ModelCheckpoint": ("dirpath",),
    "lightning.Trainer": ("default_root_dir",),
    "sft": ("ckpt_output_dir",),
}


def candidates(spec: TrainerSpec, prog: Program) -> list[CkptDir]:
    """Where the trainer says it writes checkpoints: env, its command line, its Python code, its configs."""
    env = spec.env()
    out: list[CkptDir] = []
    for name in CKPT_ENV:
        if name in env:
            ev = {
                "type": "field",
                "object": spec.object,
                "path": f"{spec.container_path}.env[name={name}]",
                "value": env[name],
            }
            out.append(CkptDir(env[name], None, f"env {name}", ev))
    if prog.args is not None and isinstance(prog.args.doc.data, dict):
        data = prog.args.doc.data
        for key in ARG_KEYS:
            if isinstance(data.get(key), str) and data[key]:
                out.append(CkptDir(data[key], None, f"arg --{key}", prog.args.source.evidence(f"--{key} {data[key]}")))
    for part in prog.pythons:
        for call, keys in CALL_KEYS.items():
            for c in part.facts.calls.get(call) or []:
                for key in keys:
                    v = c.kwargs.get(key)
                    if v is None:
                        continue
                    ev = part.source.evidence(c.site.text)
                    if v.known and isinstance(v.const, str):
                        out.append(CkptDir(v.const, None, f"script {key}", ev))
                    elif v.env and not v.dynamic:
                        val = env.get(v.env) or prog.env.get(v.env)
                        raw = val if val is not None else f"${{{v.env}}}"
                        out.append(CkptDir(raw, None, f"script {key} (env {v.env})", ev))
                    else:
                        out.append(CkptDir(f"<{v.source}>", None, f"script {key}", ev, unresolved=v.source,
                                           dynamic=v.dynamic))  # fmt: skip
        out += _dynamic_save_dirs(part)
    for part in prog.configs:
        from ckpt_doctor.facts.program.config import get

        for key in CONFIG_KEYS:
            present, val = get(part.doc, key)
            if present and isinstance(val, str) and val:
                line = part.doc.line_of(key)
                text = part.source.text.splitlines()[line - 1].strip() if line else f"{key}: {val}"
                out.append(CkptDir(val, None, f"config {key}", part.source.evidence(text)))
    return out


# save APIs that write one file: only the directories above the file name are where they save into
FILE_SAVES = ("torch.save", "safetensors", "save_file", "np.save", "numpy.save", "pickle.dump")


def _dynamic_save_dirs(part: Any) -> list[CkptDir]:
    """The directories the program's saves write into, when a part of them changes on every start: a save
    whose path is built from the clock, the host name or a random id (directly, or through a name bound to
    one). Only such directories are added: the others are known from the framework's own arguments."""
    import ast

    out: list[CkptDir] = []
    names = part.facts.dynamic_names
    for io in part.facts.io:
        if io.op != "save" or not io.path:
            continue
        try:
            expr = ast.parse(io.path.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if io.api.endswith(FILE_SAVES):  # a file: its own name may carry the time; its directory may not
            if not (isinstance(expr, ast.Call) and _last_name(expr.func) == "join" and len(expr.args) > 1):
                continue
            parts: list[ast.AST] = list(expr.args[:-1])
        else:
            parts = [expr]
        why = next((w for p in parts for w in [_dynamic_in(p, names)] if w), None)
        if why is None:
            continue
        out.append(CkptDir(f"<{io.path}>", None, f"script {io.api} path", part.source.evidence(io.site.text),
                           unresolved=io.path, dynamic=why))  # fmt: skip
    return out


def _last_name(f: Any) -> str:
    import ast

    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _dynamic_in(node: Any, names: dict[str, tuple[str, int]]) -> str | None:
    """What in an expression (as written in a save's path) changes on every start: a name bound to such a
    value, or a call of the clock or an id (`facts/program/python/dynamic.py`)."""
    import ast

    from ckpt_doctor.facts.program.python.dynamic import CLOCK, IDENTITY

    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in names:
            what, line = names[n.id]
            return f"{n.id} = … {what} (line {line})" if line else f"{n.id} = … {what}"
        if isinstance(n, ast.Call):
            f = n.func
            parts = []
            while isinstance(f, ast.Attribute):
                parts.append(f.attr)
                f = f.value
            if isinstance(f, ast.Name):
                q = ".".join([f.id, *reversed(parts)])
                if q in CLOCK or q in IDENTITY:
                    return q + "()"
    return None


def _resolve(cd: CkptDir, spec: TrainerSpec, scope: Scope, prog: Program) -> None:
    from ckpt_doctor.facts.program.shell import expand_word, kube_expand

    env = spec.env()  # fieldRef values stay as <fieldRef:…>: a per-pod part is a dynamic part
    if cd.unresolved is not None:  # an expression of the script the reader could not evaluate
        if cd.dynamic:
            cd.notes.append(f"the script computes it ({cd.unresolved}) from {cd.dynamic}, which differs on every start")
        else:
            cd.notes.append(f"the script computes it ({cd.unresolved}); its value is not known")
        return
    # kubelet expands $(VAR) in env values and args before the shell sees $VAR / ${VAR}
    value, _missing = kube_expand(cd.raw, env)
    known = {k: v for k, v in env.items() if not v.startswith("<")}
    word = expand_word(value, {**known, **prog.env}, assignment=True)
    resolved = word.value
    shown = resolved if resolved is not None else word.partial
    dyn = DYNAMIC_RX.search(shown) or DYNAMIC_RX.search(cd.raw)
    if dyn:
        cd.dynamic = dyn.group(0)
    elif resolved is None:
        cd.dynamic = _dynamic_shell_var(word.unresolved, prog)
        dyn = cd.dynamic
    if resolved is None or "<valueFrom>" in shown or "<fieldRef:" in shown:
        if not dyn:
            cd.unresolved = shown  # what cannot be resolved never fails a rule: the directory is unknown
            why = f" ({', '.join(word.unresolved)})" if word.unresolved else ""
            cd.notes.append(f"could not expand {shown!r}{why}")
            return
        resolved = shown
    value = resolved
    wd = prog.cwd or str((spec.container or {}).get("workingDir") or "")
    if not value.startswith("/"):
        if not wd:
            cd.notes.append("relative path and no workingDir: it lands in the image's working directory")
            value = posixpath.join("/", value)
        else:
            value = posixpath.join(wd, value)
    cd.path = posixpath.normpath(value)
    _place(cd, spec, scope)


def _dynamic_shell_var(names: tuple[str, ...], prog: Program, depth: int = 0) -> str | None:
    """`NAME=value` when a variable the directory uses was assigned in the script from the time, the
    pod name or the host name (`RUN_TAG="$(date …)"`, `H=$HOSTNAME`), directly or through another
    such variable: the directory then differs on every start."""
    sh = prog.shell
    if sh is None or depth > 4:
        return None
    for name, word, _exported, _line in sh.assignments:
        if name not in names:
            continue
        if DYNAMIC_RX.search(word.raw) or DYNAMIC_RX.search(word.partial):
            return f"{name}={word.raw}"
        inner = _dynamic_shell_var(word.unresolved, prog, depth + 1)
        if inner:
            return f"{name}={word.raw} ({inner})"
    return None


def _place(cd: CkptDir, spec: TrainerSpec, scope: Scope) -> None:
    """The volume behind a resolved directory: the longest mount that covers it, and what it is."""
    assert cd.path is not None
    mounts = [m for m in (spec.container or {}).get("volumeMounts") or [] if isinstance(m, dict)]
    best = None
    for m in mounts:
        mp = str(m.get("mountPath") or "").rstrip("/") or "/"
        if (cd.path == mp or cd.path.startswith(mp + "/") or mp == "/") and (
            best is None or len(mp) > len(str(best.get("mountPath")))
        ):
            best = m
    if best is None:
        cd.volume_kind = "container-fs"
        return
    cd.mount_path = str(best.get("mountPath"))
    cd.volume_name = str(best.get("name"))
    vol = next(
        (v for v in spec.pod_spec.get("volumes") or [] if isinstance(v, dict) and v.get("name") == cd.volume_name), None
    )
    if vol is None:
        claim = claim_template(scope, cd.volume_name)
        if claim is not None:  # JobSet volumeClaimPolicies: a PVC <template>-<jobset> it creates itself
            cd.volume_kind = "pvc"
            cd.claim = claim
            cd.pvc = scope.pvcs.get(claim)
            cd.pv = scope.pvs.get(claim)
            cd.notes.append(f"the JobSet's volumeClaimPolicies create PVC {claim}")
            return
        cd.volume_kind = "unknown"
        cd.notes.append(f"volume {cd.volume_name!r} is mounted but not defined")
        return
    if "persistentVolumeClaim" in vol:
        cd.volume_kind = "pvc"
        cd.claim = str((vol["persistentVolumeClaim"] or {}).get("claimName") or "")
        cd.pvc = scope.pvcs.get(cd.claim)
        cd.pv = scope.pvs.get(cd.claim)
        cls = (cd.pvc.spec.get("storageClassName") if cd.pvc else None) or (
            cd.pv.spec.get("storageClassName") if cd.pv else None
        )
        cd.storageclass = scope.storageclasses.get(str(cls)) if cls else None
        cls_from = cd.pvc if cd.pvc is not None and cd.pvc.spec.get("storageClassName") else cd.pv
        cls_at = cls_from.ref() if cls_from is not None else f"PersistentVolumeClaim/{scope.namespace}/{cd.claim}"
        found = node_local(cd.pv, cd.storageclass, str(cls) if cls else None, cls_at)
        if found is not None:
            cd.node_local, cd.node_local_ev = found
    elif "emptyDir" in vol:
        cd.volume_kind = "emptyDir"
    elif "hostPath" in vol:
        cd.volume_kind = "hostPath"
        cd.node_local = f"hostPath {((vol.get('hostPath') or {}).get('path'))}"
    elif "ephemeral" in vol:
        cd.volume_kind = "ephemeral"
    elif "configMap" in vol or "secret" in vol or "downwardAPI" in vol or "projected" in vol:
        cd.volume_kind = "configMap"
    else:
        cd.volume_kind = "network"


def node_local(pv: Obj | None, sc: Obj | None, cls: str | None, cls_at: str) -> tuple[str, dict[str, Any]] | None:
    """Why a claim's storage is pinned to one node, and the field that shows it; `cls_at` is the
    object whose spec.storageClassName named `cls`."""

    def field(obj: str, path: str, value: Any) -> dict[str, Any]:
        return {"type": "field", "object": obj, "path": path, "value": value}

    if pv is not None:
        if "local" in pv.spec:
            return f"PersistentVolume {pv.name} is a `local` volume", field(pv.ref(), "spec.local", pv.spec["local"])
        if "hostPath" in pv.spec:
            return f"PersistentVolume {pv.name} is a hostPath volume", field(
                pv.ref(), "spec.hostPath", pv.spec["hostPath"]
            )
    if sc is not None:
        prov = str(sc.raw.get("provisioner") or "")
        if any(p in prov for p in NODE_LOCAL_PROVISIONERS):
            return f"StorageClass {sc.name} uses the node-local provisioner {prov}", field(
                sc.ref(), "provisioner", prov
            )
    if cls and any(p in cls for p in ("local-storage", "local-path", "topolvm", "openebs-hostpath", "hostpath")):
        return f"storage class {cls!r} is node-local by name", field(cls_at, "spec.storageClassName", cls)
    return None


def checkpoint_dirs(spec: TrainerSpec, prog: Program, scope: Scope) -> list[CkptDir]:
    seen = set()
    uniq = []
    for cd in candidates(spec, prog):
        _resolve(cd, spec, scope, prog)
        key = cd.path or cd.unresolved
        if key in seen:
            continue
        seen.add(key)
        uniq.append(cd)
    return uniq


def claim_templates(scope: Scope) -> dict[str, dict[str, Any]]:
    """JobSet volumeClaimPolicies templates (v0.11+), by name: the JobSet's own, else the runtime's."""
    specs = []
    if scope.jobset is not None:
        specs.append(scope.jobset.spec)
    if scope.runtime is not None:
        specs.append((scope.runtime.spec.get("template") or {}).get("spec") or {})
    out: dict[str, dict[str, Any]] = {}
    for spec in specs:
        for pol in spec.get("volumeClaimPolicies") or []:
            for t in (pol or {}).get("templates") or [] if isinstance(pol, dict) else []:
                name = ((t or {}).get("metadata") or {}).get("name") if isinstance(t, dict) else None
                if name:
                    out.setdefault(str(name), t)
    return out


def claim_template(scope: Scope, volume: str | None) -> str | None:
    """The PVC name JobSet gives the volumeClaimPolicies template `volume` (`<template>-<jobset>`)."""
    if not volume or volume not in claim_templates(scope):
        return None
    owner = scope.jobset.name if scope.jobset is not None else (scope.name or "<trainjob>")
    return f"{volume}-{owner}"


# -- checkpoint identity: which directory a checkpoint was saved into -------------------------------------
def _checkpoint_names(stacks: tuple[str, ...]) -> list[Any]:
    """The checkpoint names of the frameworks in `stacks` (of every framework when none is named), without the
    catch-all `*` of frameworks whose program names the directory (DCP)."""
    from ckpt_doctor import frameworks

    fws = [f for f in (frameworks.get(s) for s in stacks) if f is not None] if stacks else []
    fws = fws or list(frameworks.all_frameworks())
    return [n for f in fws if f.layout is not None for n in f.layout.names if n.template.strip("*")]


def _names_step(comp: str, step: int | None) -> bool:
    """A path component that carries the checkpoint's step as a number of its own (`step_20`, `global_step20`,
    `epoch=0-step=20.ckpt`, `iter_0000020`, `20`), not inside a longer number (`run-20261202`)."""
    return step is not None and re.search(rf"(?<![0-9]){0 if step == 0 else ''}0*{step}(?![0-9])", comp) is not None


def save_into(path: str | None, step: int | None = None, stacks: tuple[str, ...] = ()) -> str | None:
    """The directory a framework saved a checkpoint into, from the path a log line or a listing gives for it
    (issue 19 §4: checkpoint identity follows the framework's layout).

    The checkpoint is the deepest component of the path that is one of the frameworks' checkpoint names
    (`checkpoint-10`, `step=10.ckpt`, `iter_0000010`) or carries the saved step; a checkpoint nested in another
    (DeepSpeed's `global_step10` tag inside HF Trainer's `checkpoint-10`, a layout's `parent`) belongs to the
    outer one; a file checkpoint (Lightning's `step=N.ckpt`) is saved into its directory. A relative path (a
    DeepSpeed tag as its log names it) is relative to a directory the line does not name: None."""
    if not path or not path.startswith("/"):
        return None
    comps = [c for c in path.rstrip("/").split("/")]
    if len(comps) < 2:
        return None
    names = _checkpoint_names(stacks)
    # a name that starts with a wildcard (`*{step}*`) says little on its own: it counts with the step only
    exact = [n for n in names if not n.template.startswith("*")]

    def named(c: str) -> Any:
        return next((n for n in exact if n.match(c) is not None), None)

    def is_checkpoint(c: str) -> bool:
        if step is not None:
            return _names_step(c, step) and (named(c) is not None or any(n.match(c) for n in names))
        return named(c) is not None

    at = next((i for i in range(len(comps) - 1, 0, -1) if is_checkpoint(comps[i])), None)
    if at is None:
        return posixpath.normpath(path) if "." not in comps[-1] else posixpath.dirname(path.rstrip("/")) or "/"
    while at > 1 and _inside(comps[at - 1], comps[at], step, exact):
        at -= 1  # a tag inside a checkpoint (global_step10 in checkpoint-10): the outer one is the checkpoint
    return "/".join(comps[:at]) or "/"


def _inside(outer: str, inner: str, step: int | None, names: list[Any]) -> bool:
    """`inner` is a checkpoint nested in the checkpoint `outer`: its layout says so (DeepSpeed's `global_step{step}`
    has the parent `hf-trainer:checkpoint-{step}`), or both are checkpoint names carrying the same step."""
    outer_names = [n for n in names if n.match(outer) is not None]
    if not outer_names:
        return False
    for n in names:
        if n.parent and n.match(inner) is not None:
            tmpl = n.parent.split(":", 1)[-1]
            if any(o.template == tmpl for o in outer_names):
                return True
    return step is not None and _names_step(outer, step) and _names_step(inner, step)

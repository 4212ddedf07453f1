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

from ckpt_doctor.facts.program import VAR_REF, Text, TrainerSpec, shell_script
from ckpt_doctor.scope import Scope
from ckpt_doctor.snapshot import Obj

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
FLAG_RX = re.compile(
    r"(?:^|\s)--?(?P<key>output[_-]dir|save|ckpt[_-]output[_-]dir|checkpoint[_-]dir|ckpt[_-]dir|save[_-]dir)"
    r"(?:=|\s+)(?P<val>\"[^\"]*\"|'[^']*'|\S+)"
)
KV_RX = re.compile(
    r"(?:^|[\s,(])(?P<key>output_dir|ckpt_output_dir|checkpointer\.output_dir|checkpoint_dir)\s*[:=]\s*"
    r"(?P<val>\"[^\"]*\"|'[^']*'|[^\s,)#]+)",
    re.M,
)
DYNAMIC_RX = re.compile(
    r"\$[{(]?(?:HOSTNAME|POD_NAME|RANDOM|MY_POD_NAME)[})]?|"
    r"\$\((?:hostname|date|uuidgen|cat /proc/sys/kernel/random/uuid)[^)]*\)|`(?:hostname|date)[^`]*`|"
    r"<fieldRef:metadata\.(?:name|uid)>|time\.time\(\)|datetime\.now\(\)|uuid4\(\)"
)
PY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
SHELL_VAR = re.compile(r"\$\{(?P<a>[A-Za-z_][A-Za-z0-9_]*)(?::?-(?P<d>[^}]*))?\}|\$(?P<b>[A-Za-z_][A-Za-z0-9_]*)")
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


def _unquote(v: str) -> str:
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    return v


def expand(value: str, env: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m.group("a") or m.group("b")
        if name in env:
            return env[name]
        if m.group("d") is not None:
            return m.group("d")
        return m.group(0)

    for _ in range(3):
        new = SHELL_VAR.sub(sub, value)
        if new == value:
            break
        value = new
    return value


def candidates(spec: TrainerSpec, texts_: list[Text]) -> list[CkptDir]:
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
    for t in texts_:
        rx_list = [FLAG_RX] if t.kind in ("argv", "script") else []
        rx_list.append(KV_RX)
        for rx in rx_list:
            for m in rx.finditer(t.text):
                val = _unquote(m.group("val"))
                if val.startswith(("os.environ", "os.getenv")):
                    continue  # the env candidate already covers it
                python = t.kind != "argv" or any(x.kind == "script" for x in texts_)  # not Hydra-style args
                if rx is KV_RX and python and "=" in m.group(0) and PY_NAME.fullmatch(m.group("val")):
                    continue  # `output_dir=CKPT_DIR` passes a Python variable, not a relative path
                if rx is KV_RX and t.kind == "argv" and not m.group(0).lstrip().startswith(("output", "ckpt", "check")):
                    continue
                key = m.group("key")
                src = f"{'arg --' if rx is FLAG_RX else ('config ' if t.kind == 'config' else 'script ')}{key}"
                out.append(CkptDir(val, None, src, t.evidence(m.group(0).strip())))
    # a `--save` also names Megatron's directory; prefer an explicit output/ckpt name first
    return out


def _resolve(cd: CkptDir, spec: TrainerSpec, scope: Scope) -> None:
    env = spec.env()
    # kubelet expands $(VAR) in env values and args before the shell sees $VAR / ${VAR}
    value = expand(VAR_REF.sub(lambda m: env.get(m.group(1), m.group(0)), cd.raw), env)
    dyn = DYNAMIC_RX.search(value) or DYNAMIC_RX.search(cd.raw)
    if dyn:
        cd.dynamic = dyn.group(0)
    if ("$" in value or "<valueFrom>" in value or "<fieldRef:" in value) and not dyn:
        cd.unresolved = value  # what cannot be resolved never fails a rule: the directory is unknown
        cd.notes.append(f"could not expand {value!r}")
        return
    wd = str((spec.container or {}).get("workingDir") or "")
    if not value.startswith("/"):
        if not wd:
            cd.notes.append("relative path and no workingDir: it lands in the image's working directory")
            value = posixpath.join("/", value)
        else:
            value = posixpath.join(wd, value)
    cd.path = posixpath.normpath(value)
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


def checkpoint_dirs(spec: TrainerSpec, texts_: list[Text], scope: Scope) -> list[CkptDir]:
    out = candidates(spec, texts_)
    seen = set()
    uniq = []
    for cd in out:
        _resolve(cd, spec, scope)
        key = cd.path or cd.unresolved
        if key in seen:
            continue
        seen.add(key)
        uniq.append(cd)
    return uniq


def is_shell_wrapped(spec: TrainerSpec) -> bool:
    return shell_script(spec.argv()) is not None

"""Listing the TrainJob's checkpoint directory on the cluster (`--inspect-checkpoints`; contracts.md §2).

Read-only by construction: every command is a fixed argv, run without a shell, of `find`, `ls`, `df`, `head`
and `cat`, with the directory as one argument; none writes. In a running trainer container (rank 0 first):

    find DIR -maxdepth 4 -printf '%y %s %T@ %p\\n'      (else ls -laR --time-style=full-iso DIR, else ls -laR DIR)
    df -P -B1 DIR
    head -c 65536 FILE                                   for each pointer file the listing shows (DeepSpeed
                                                          `latest`, Megatron's tracker); `cat` when the image
                                                          has no `head` and the listing shows the file is small

With no trainer pod running, and only when `confirm` says yes, a short-lived reader pod mounts the checkpoint
PVC read-only at the trainer's mount path (the trainer's own image unless `image` is given; `sleep` as its
command), is listed the same way, and is deleted on every way out: the end, an error, Ctrl-C, SIGTERM or
SIGHUP (and `activeDeadlineSeconds` ends it should this process be killed outright).

What could not be read is a gap (`checkpoints/<pod>/<container>`, or `checkpoints`) with the reason: a refused
exec is `forbidden: cannot create pods/exec …`, never an empty directory.
"""

from __future__ import annotations

import secrets
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ckpt_doctor import frameworks
from ckpt_doctor.errors import InputError, UsageError
from ckpt_doctor.facts.listing import MAX_SMALL_FILE, parse_listing
from ckpt_doctor.signals import handled, raise_interrupt
from ckpt_doctor.snapshot import Gap, ListingSource, Obj, Snapshot
from ckpt_doctor.sources.live.client import CallError
from ckpt_doctor.sources.live.kinds import POD

READER_PREFIX = "ckpt-doctor-reader-"
READER_LABEL = "app.kubernetes.io/managed-by"
READER_FOR = "ckpt-doctor.io/reader-for"
READER_DEADLINE = 600  # seconds: the reader pod ends on its own after this, whatever happens to us
COMMANDS = (
    ("find", "{dir}", "-maxdepth", "4", "-printf", "%y %s %T@ %p\\n"),
    ("ls", "-laR", "--time-style=full-iso", "{dir}"),
    ("ls", "-laR", "{dir}"),
)
Confirm = Callable[[str], bool]


@dataclass
class Inspect:
    """What the user asked for: list the checkpoint directory (exec), and how a reader pod may be made."""

    image: str | None = None  # the reader pod's image (default: the trainer's)
    confirm: Confirm | None = None  # asked before a reader pod is created; None: never create one
    timeout: float = 30.0  # per command
    pod_wait: float = 120.0  # how long a reader pod may take to start
    made: list[str] = field(default_factory=list)  # reader pods created (and deleted) by this inspection
    left: list[str] = field(default_factory=list)  # reader pods that could not be deleted, and why


@dataclass
class Found:
    listings: dict[tuple[str, str], ListingSource] = field(default_factory=dict)
    gaps: list[Gap] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def inspect_checkpoints(api: Any, snap: Snapshot, namespace: str, name: str, opts: Inspect) -> Found:
    """List the checkpoint directory of TrainJob `namespace/name`, whose objects are in `snap`."""
    from ckpt_doctor.facts.context import Facts
    from ckpt_doctor.scope import build_scope, pick_trainjob

    found = Found()
    try:
        facts = Facts(build_scope(snap, pick_trainjob(snap, f"{namespace}/{name}")))
        ck = facts.ckpt_dir
    except (InputError, UsageError) as e:
        found.gaps.append(Gap("checkpoints", f"the checkpoint directory could not be worked out: {e}"))
        return found
    if ck is None or not ck.path:
        why = "no checkpoint directory is known" if ck is None else f"{ck.raw} could not be resolved to a path"
        found.gaps.append(Gap("checkpoints", f"{why} (ckpt-dir rules say why); nothing was listed"))
        return found
    pods = _running_trainers(facts)
    if pods:
        for pod, container in pods[:1]:
            _list_in(api, found, namespace, pod.name, container, ck.path, opts, name)
        return found
    if ck.volume_kind != "pvc" or not ck.claim or ck.mount_path is None:
        found.gaps.append(Gap("checkpoints", f"no trainer pod is running, and {ck.path} is on no PVC a reader pod "
                                             f"could mount ({ck.volume_kind})"))  # fmt: skip
        return found
    image = opts.image or _trainer_image(facts)
    if not image:
        found.gaps.append(Gap("checkpoints", "no trainer pod is running and its image is not known: pass "
                                             "--inspect-image"))  # fmt: skip
        return found
    question = (f"No trainer pod of {namespace}/{name} is running. Create a short-lived pod {READER_PREFIX}… in "
                f"{namespace} that mounts PVC {ck.claim} read-only at {ck.mount_path} (image {image}) to list "
                f"{ck.path}? It is deleted when the listing is read")  # fmt: skip
    if opts.confirm is None or not opts.confirm(question):
        found.gaps.append(Gap("checkpoints", "no trainer pod is running, and a reader pod was not confirmed "
                                             "(answer y, or pass --yes)"))  # fmt: skip
        return found
    try:
        with reader_pod(api, namespace, name, ck.claim, ck.mount_path, ck.volume_name, image, opts) as pod:
            _list_in(api, found, namespace, pod, "reader", ck.path, opts, name)
    except CallError as e:
        found.gaps.append(Gap("checkpoints", _why(e, "create pods", namespace) + " (the reader pod)"))
    except TimeoutError as e:
        found.gaps.append(Gap("checkpoints", str(e)))
    finally:
        found.notes.extend(opts.left)
    return found


def _running_trainers(facts: Any) -> list[tuple[Obj, str]]:
    """Running trainer pods whose trainer container runs, rank 0 first."""
    from ckpt_doctor.facts.attempts import COMPLETION_INDEX, trainer_container_name

    out = []
    for p in facts.scope.trainer_pods():
        if p.status.get("phase") != "Running" or p.meta.get("deletionTimestamp"):
            continue
        cname = trainer_container_name(p)
        for cs in p.status.get("containerStatuses") or []:
            if isinstance(cs, dict) and cs.get("name") == cname and (cs.get("state") or {}).get("running"):
                out.append((p, cname))
    return sorted(out, key=lambda pc: (pc[0].labels.get(COMPLETION_INDEX, "0") != "0", pc[0].created, pc[0].name),
                  reverse=False)  # fmt: skip


def _trainer_image(facts: Any) -> str:
    spec = facts.spec
    c = spec.container if spec is not None else None
    return str((c or {}).get("image") or "")


def _why(e: CallError, doing: str, namespace: str) -> str:
    if e.kind == "forbidden":
        return f"forbidden: cannot {doing} in {namespace} (`ckpt-doctor rbac` prints the Role that allows it)"
    if e.kind == "notfound":
        return f"not found: {e.message}"
    return f"{e.kind}: {doing} in {namespace}: {e.message}"


def _run(api: Any, pod: str, ns: str, container: str, argv: list[str], timeout: float) -> tuple[int | None, str]:
    return api.exec(pod, ns, container, argv, timeout)  # type: ignore[no-any-return]


def _list_in(api: Any, found: Found, ns: str, pod: str, container: str, path: str, opts: Inspect,
             trainjob: str) -> None:  # fmt: skip
    """List `path` in one container: the listing, its df, its pointer files."""
    what = f"checkpoints/{pod}/{container}"
    text, problem = "", ""
    at = _now()
    for cmd in COMMANDS:
        argv = [a.replace("{dir}", path) for a in cmd]
        try:
            rc, out = _run(api, pod, ns, container, argv, opts.timeout)
        except CallError as e:
            found.gaps.append(Gap(what, _why(e, "create pods/exec", ns)))
            return
        if rc == 0 or (rc is not None and _speaks_of_dir(out, path)):
            text = out
            break
        problem = f"`{' '.join(argv[:3])} …` {'timed out' if rc is None else f'exited {rc}'}: {out.strip()[:160]}"
    else:
        found.gaps.append(Gap(what, f"the directory could not be listed: {problem}"))
        return
    head = f"# dir: {path}\n# at: {at}\n# pod: {pod}\n# container: {container}\n# trainjob: {ns}/{trainjob}\n"
    src = ListingSource(pod, container, f"exec in {pod}/{container}", text=head + text)
    try:
        src.df_text = _df(api, pod, ns, container, path, opts)
        src.files = _small_files(api, pod, ns, container, src.text or "", path, opts)
    except CallError as e:
        found.notes.append(f"{what}: df or a small file could not be read: {_why(e, 'create pods/exec', ns)}")
    found.listings[(pod, container)] = src


def _speaks_of_dir(out: str, path: str) -> bool:
    """find/ls saying the directory itself does not exist: a fact, not a failure."""
    low = out.lower()
    return "no such file or directory" in low and path in out and len(out.splitlines()) <= 2


def _df(api: Any, pod: str, ns: str, container: str, path: str, opts: Inspect) -> str | None:
    rc, out = _run(api, pod, ns, container, ["df", "-P", "-B1", path], opts.timeout)
    return out if rc == 0 else None


def _pointer_names() -> set[str]:
    return {p.file for f in frameworks.all_frameworks() if f.layout is not None for p in f.layout.pointers}


def _small_files(api: Any, pod: str, ns: str, container: str, text: str, path: str, opts: Inspect) -> dict[
    str, bytes
]:
    """The pointer files the listing shows (within three levels), read with `head -c` (else `cat` when the listing
    shows the file is small)."""
    lst = parse_listing(text, pod, container, "exec")
    if not lst.seen or lst.root is None:
        return {}
    names = _pointer_names()
    out: dict[str, bytes] = {}
    base = lst.dir.rstrip("/")
    for n in lst.root.walk():
        if n.kind != "f" or n.name not in names or n.path.count("/") - base.count("/") > 3:
            continue
        rc, data = _run(api, pod, ns, container, ["head", "-c", str(MAX_SMALL_FILE), n.path], opts.timeout)
        if rc in (126, 127) and n.size is not None and n.size <= MAX_SMALL_FILE:
            rc, data = _run(api, pod, ns, container, ["cat", n.path], opts.timeout)
        if rc == 0:
            out[n.path[len(base) + 1 :]] = data.encode("utf-8", "surrogateescape")[:MAX_SMALL_FILE]
        if len(out) >= 64:
            break
    return out


# -- the reader pod -------------------------------------------------------------------------------------------
def reader_spec(name: str, namespace: str, trainjob: str, claim: str, mount: str, image: str) -> dict[str, Any]:
    """A pod that only sleeps, with the checkpoint PVC mounted read-only, ended by its deadline at the latest."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {READER_LABEL: "ckpt-doctor", READER_FOR: trainjob[:63]},
        },
        "spec": {
            "restartPolicy": "Never",
            "activeDeadlineSeconds": READER_DEADLINE,
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "containers": [
                {
                    "name": "reader",
                    "image": image,
                    "command": ["sleep", str(READER_DEADLINE)],
                    "volumeMounts": [{"name": "checkpoints", "mountPath": mount, "readOnly": True}],
                    "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True},
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
                }
            ],
            "volumes": [{"name": "checkpoints", "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}],
        },
    }


@contextmanager
def _signals_unwind() -> Iterator[None]:
    """SIGTERM and SIGHUP unwind like Ctrl-C while the reader pod exists, so that it is deleted (main thread
    only; elsewhere the caller's handling applies)."""
    with handled((signal.SIGTERM, signal.SIGHUP), raise_interrupt):
        yield


@contextmanager
def reader_pod(api: Any, namespace: str, trainjob: str, claim: str, mount: str, volume: str | None, image: str,
               opts: Inspect) -> Iterator[str]:  # fmt: skip
    """Create the reader pod, wait until it runs, yield its name; delete it on every way out. Its name is chosen
    here, before the request, so that a signal arriving while the server creates it still finds it to delete."""
    name = READER_PREFIX + "".join(secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
    with _signals_unwind():
        asked = False
        try:
            asked = True
            api.create(POD, namespace, reader_spec(name, namespace, trainjob, claim, mount, image))
            opts.made.append(name)
            _wait_running(api, namespace, name, opts.pod_wait)
            yield name
        finally:
            if asked:
                why = _delete(api, namespace, name)
                if why:
                    opts.left.append(f"the reader pod {name} could not be deleted ({why}): kubectl -n {namespace} "
                                     f"delete pod {name} (it ends by itself after {READER_DEADLINE} s)")  # fmt: skip


def _wait_running(api: Any, namespace: str, name: str, limit: float) -> None:
    end = time.monotonic() + limit
    delay = 0.05
    last = ""
    while True:
        pod = api.get(POD, name, namespace)
        st = pod.get("status") or {}
        phase = str(st.get("phase") or "")
        if phase == "Running":
            return
        if phase in ("Failed", "Succeeded"):
            raise TimeoutError(f"the reader pod {name} ended ({phase}) before it could be listed")
        waiting = [((cs.get("state") or {}).get("waiting") or {}) for cs in st.get("containerStatuses") or []
                   if isinstance(cs, dict)]  # fmt: skip
        last = next((f"{w.get('reason')}: {w.get('message', '')}" for w in waiting if w.get("reason")), phase)
        if time.monotonic() >= end:
            raise TimeoutError(f"the reader pod {name} did not start within {limit:.0f} s ({last or 'Pending'}); "
                               "deleted")  # fmt: skip
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


def _delete(api: Any, namespace: str, name: str) -> str:
    """Delete the reader pod (a few tries); '' when it is gone, else why it could not be deleted."""
    why = ""
    for _ in range(3):
        try:
            api.delete(POD, name, namespace)
            return ""
        except CallError as e:
            if e.kind == "notfound":
                return ""
            why = f"{e.kind}: {e.message}"
        except KeyboardInterrupt:
            why = "interrupted"
            continue  # a second Ctrl-C while deleting: delete anyway
    return why


def to_snapshot(snap: Snapshot, found: Found, redact: Callable[[str], str] | None = None) -> None:
    """Put what was found into the snapshot, its text through the redactor (`redact`) when the collection is."""
    for key, src in found.listings.items():
        if redact is not None:
            src.text = redact(src.text or "")
            src.df_text = redact(src.df_text) if src.df_text is not None else None
            src.files = {k: redact(v.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
                         for k, v in src.files.items() if isinstance(v, bytes)}  # fmt: skip
        snap.checkpoints[key] = src
    snap.not_collected.extend(found.gaps)
    snap.notes.extend(found.notes)

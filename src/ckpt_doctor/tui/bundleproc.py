"""Read and diagnose a bundle in a child process, streaming the results back as pickled frames.

Why a process and not a thread: parsing a big `kubectl get -o yaml` dump is mostly one long C call
inside libyaml that holds the GIL for a quarter of a second, which would freeze the app's screen; in
a child it freezes nothing, and it runs on another core while the app starts, so the findings are
on screen about as soon as `ckpt-doctor diagnose` would have printed them.

    python -m ckpt_doctor.tui.bundleproc BUNDLE [--dir EXTRACTED] [--first NAME] [--trainer-version V]
                                         [--signatures DIR]...

Frames on stdout, each an 8-byte length and a pickle, in order: ("rows", [JobRow]) | ("fatal",
message); ("alias", NAME, NAMESPACE/NAME) when --first named a TrainJob without its namespace; then
per TrainJob, the one named by --first first: ("view", key, preview View); its objects and events in
parts, ("objects", key, {ref: object}) and ("events", key, [EventRow]), each part small; then
("full", key, View) with its objects and events left out (the parts before it are they, in order)
and its Diagnosis `Deferred`; or ("error", key, message) in place of any of these. Then ("done",).

The parts keep every unpickling short: one call of `pickle.loads` holds the GIL throughout, and a
512-pod view unpickled whole froze the app's screen for 40-80 ms as it arrived.
No Textual here.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

OBJECTS_PER_PART = 256  # about 0.1 MB of pickle each: a millisecond or two to unpickle
EVENTS_PER_PART = 1024


def _send(out: BinaryIO, *frame: Any) -> None:
    data = pickle.dumps(frame, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(len(data).to_bytes(8, "big") + data)  # length first: the reader unpickles whole frames
    out.flush()


def serve(
    bundle: Path,
    extracted: Path | None,
    first: str | None,
    out: BinaryIO,
    trainer_version: str | None = None,
    signatures: tuple[Path, ...] = (),
) -> None:
    from ckpt_doctor.errors import InputError, UsageError
    from ckpt_doctor.pipeline import diagnose_snapshot
    from ckpt_doctor.scope import pick_trainjob, trainjobs
    from ckpt_doctor.sources.bundle import load_bundle
    from ckpt_doctor.tui.model import Deferred, build_preview, complete_view, job_row, snapshot_now

    try:
        snap = load_bundle(bundle, keep_dir=extracted)
    except InputError as e:
        _send(out, "fatal", str(e))
        return
    now = snapshot_now(snap.meta, live=False)
    rows = []
    for tj in trainjobs(snap):
        js = next((j for j in snap.of_kind("JobSet") if j.name == tj.name and j.namespace == tj.namespace), None)
        rows.append(job_row(tj.raw, now, str(int(js.status.get("restarts") or 0)) if js is not None else "…"))
    _send(out, "rows", rows)
    keys = [r.key for r in rows]
    if first:
        try:
            tj = pick_trainjob(snap, first)
        except (InputError, UsageError) as e:
            _send(out, "error", first, str(e))
        else:
            key = f"{tj.namespace}/{tj.name}" if tj.namespace else tj.name
            if key != first:
                _send(out, "alias", first, key)
            keys = [key] + [k for k in keys if k != key]
    for key in keys:
        try:
            diag = diagnose_snapshot(snap, key, trainer_version, list(signatures))
            view = build_preview(diag)
            _send(out, "view", key, view.preview())  # small: on screen while the rest is built and sent
            full = complete_view(view, diag)
            for objects in _parts(list(full.objects.items()), OBJECTS_PER_PART):
                _send(out, "objects", key, dict(objects))
            for events in _parts(full.events, EVENTS_PER_PART):
                _send(out, "events", key, events)
            _send(out, "full", key, replace(full, objects={}, events=[], diag=Deferred.of(diag)))
        except InputError as e:
            _send(out, "error", key, str(e))
        except Exception as e:  # one broken TrainJob must not hide the others
            if os.environ.get("CKPT_DOCTOR_DEBUG"):
                raise
            _send(out, "error", key, f"{type(e).__name__}: {e}")
    _send(out, "done")


def _parts(items: list[Any], size: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ckpt_doctor.tui.bundleproc")
    p.add_argument("bundle", type=Path)
    p.add_argument("--dir", type=Path, help="where the archive was already extracted")
    p.add_argument("--first", help="the TrainJob to diagnose first (NAME or NAMESPACE/NAME)")
    p.add_argument("--trainer-version", help="the cluster's Trainer version, for the engine")
    p.add_argument("--signatures", type=Path, action="append", default=[], help="extra signature directory")
    args = p.parse_args(argv)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # nothing else may write into the frame stream
    try:
        serve(args.bundle, args.dir, args.first, out, args.trainer_version, tuple(args.signatures))
    except BrokenPipeError:  # the app quit before reading everything
        return 0
    finally:
        try:
            out.close()
        except BrokenPipeError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

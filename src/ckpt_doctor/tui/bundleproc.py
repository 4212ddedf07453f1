"""Read and diagnose a bundle in a child process, streaming the results back as pickled frames.

Why a process and not a thread: parsing a big `kubectl get -o yaml` dump is mostly one long C call
inside libyaml that holds the GIL for a quarter of a second, which would freeze the app's screen; in
a child it freezes nothing, and it runs on another core while the app starts, so the findings are
on screen about as soon as `ckpt-doctor diagnose` would have printed them.

    python -m ckpt_doctor.tui.bundleproc BUNDLE [--dir EXTRACTED] [--first NAME] [--trainer-version V]
                                         [--signatures DIR]...

Frames on stdout, each an 8-byte length and a pickle, in order: ("rows", [JobRow]) | ("fatal",
message); ("alias", NAME, NAMESPACE/NAME) when --first named a TrainJob without its namespace; then
per TrainJob ("view", key, preview View), then ("full", key, View), or ("error", key, message),
the one named by --first first; then ("done",).
No Textual here.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
from pathlib import Path
from typing import Any, BinaryIO


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
    from ckpt_doctor.errors import InputError
    from ckpt_doctor.pipeline import diagnose_snapshot
    from ckpt_doctor.scope import pick_trainjob, trainjobs
    from ckpt_doctor.sources.bundle import load_bundle
    from ckpt_doctor.tui.model import build_view, job_row, snapshot_now

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
        except InputError as e:
            _send(out, "error", first, str(e))
        else:
            key = f"{tj.namespace}/{tj.name}" if tj.namespace else tj.name
            if key != first:
                _send(out, "alias", first, key)
            keys = [key] + [k for k in keys if k != key]
    for key in keys:
        try:
            view = build_view(diagnose_snapshot(snap, key, trainer_version, list(signatures)))
        except InputError as e:
            _send(out, "error", key, str(e))
            continue
        except Exception as e:  # one broken TrainJob must not hide the others
            if os.environ.get("CKPT_DOCTOR_DEBUG"):
                raise
            _send(out, "error", key, f"{type(e).__name__}: {e}")
            continue
        _send(out, "view", key, view.preview())  # small: on screen while the rest is pickled
        _send(out, "full", key, view)
    _send(out, "done")


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

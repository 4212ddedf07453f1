"""Diagnose many TrainJobs: every one of a fleet collection (live) or of a bundle, one outcome each.

Collections and log reads run concurrently; diagnoses run one at a time in a process (they are CPU-bound,
and the program readers share their parsers), each on its own Snapshot, which is dropped once the outcome
holds what the output needs (the row, and the rendered part of the requested format). A live scan may
diagnose in worker processes as well (`fleet/procs.py`: one per CPU by default), with the same outcomes in
the same order. A TrainJob that cannot be diagnosed is an outcome with the reason, never a silent omission.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ckpt_doctor.errors import InputError, InternalError
from ckpt_doctor.facts.logs import load_signatures
from ckpt_doctor.fleet.summary import JobSummary, summarize
from ckpt_doctor.pipeline import diagnose_snapshot
from ckpt_doctor.scope import trainjobs
from ckpt_doctor.snapshot import Snapshot

if TYPE_CHECKING:
    from ckpt_doctor.engine.walk import Diagnosis
    from ckpt_doctor.sources.live.client import Cluster
    from ckpt_doctor.sources.live.collector import Collected
    from ckpt_doctor.sources.live.fleet import FleetCollector, NamespaceError
    from ckpt_doctor.sources.live.progress import Progress

# one diagnosis at a time in the process (shared parsers; CPU-bound anyway), and one redaction: both parse Python
# with `ast`, which CPython 3.11 does not do in two threads at once ("AST constructor recursion depth mismatch")
_DIAGNOSING = threading.RLock()
LOG_WORKERS = 4  # one TrainJob's log reads at once, within the scan's limit (`in_flight`)


@dataclass
class JobOutcome:
    namespace: str
    name: str
    row: JobSummary | None = None
    error: str | None = None  # why it could not be diagnosed
    part: Any = None  # this job's piece of the requested output (json document, sarif run, junit suite)
    exit: int = 0  # what `diagnose NS/NAME` would exit with (0, 1, or 4 with --strict)


@dataclass
class FleetResult:
    source: str  # live | bundle
    where: str  # what was scanned, in words
    outcomes: list[JobOutcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how the scan read the cluster, what it could not
    namespace_errors: list[NamespaceError] = field(default_factory=list)
    location: str = ""  # the bundle's path (SARIF locations are relative to it)


Part = Callable[["Diagnosis"], Any]


class JsonText(str):
    """A TrainJob's JSON document, already printed as the fleet document holds it: as `diagnose NS/NAME -o json`
    prints it (indent 2), one level deeper (its lines after the first indented by 4 more spaces)."""


def deeper(printed: str) -> JsonText:
    """A document printed with indent 2 (no string in it holds a raw newline) as an item of the fleet
    document's `diagnoses`."""
    return JsonText(printed.replace("\n", "\n    "))


def part_for(fmt: str | None) -> Part | None:
    """What to keep of each diagnosis for output format `fmt` (None: only the row)."""
    if fmt == "json":  # exactly the document `diagnose NS/NAME -o json` prints, printed as the fleet document
        import json  # prints it, where it is diagnosed (a worker hands back one string, not thousands of objects)

        from ckpt_doctor.report.jsonout import document

        return lambda d: deeper(json.dumps(document(d), indent=2, ensure_ascii=False, default=str))
    if fmt == "sarif":
        from ckpt_doctor.report.sarif import build

        return lambda d: build(d)["runs"][0]
    if fmt == "junit":
        from ckpt_doctor.report.junit import build as junit

        return lambda d: junit(d)[0]
    return None


class Diagnoser:
    """Turns one Snapshot into one outcome, as `diagnose` would judge it."""

    def __init__(
        self,
        version_flag: str | None = None,
        signature_dirs: Sequence[Path] = (),
        fmt: str | None = None,
        fail_on: str = "warning",
        strict: bool = False,
    ) -> None:
        self.version_flag = version_flag
        self.signature_dirs = list(signature_dirs)
        self.part = part_for(fmt)
        self.fail_on = fail_on
        self.strict = strict
        self._signatures: list[Any] | None = None  # read once for the fleet (and its log scanner's index built once)

    def one(self, snap: Snapshot, namespace: str, name: str, wanted: str | None = None) -> JobOutcome:
        """Diagnose TrainJob `wanted` (default NAMESPACE/NAME) of `snap`."""
        out = JobOutcome(namespace, name)
        notes, malformed = list(snap.notes), len(snap.coverage.malformed)
        try:
            with _DIAGNOSING:
                target = wanted or f"{namespace}/{name}"
                if self._signatures is None:
                    self._signatures = load_signatures(self.signature_dirs)
                diag = diagnose_snapshot(snap, target, self.version_flag, self.signature_dirs, self._signatures)
                out.row = summarize(diag)
                out.part = self.part(diag) if self.part is not None else None
                out.exit = diag.exit_code(self.fail_on, self.strict)
        except InputError as e:
            out.error = _clean(e.message)
        except InternalError as e:
            out.error = _clean(f"internal error: {e}; please report it")
        finally:  # a bundle's snapshot is shared by its TrainJobs: what one diagnosis added is its own
            snap.notes[:] = notes
            del snap.coverage.malformed[malformed:]
        return out


def diagnose_collected(
    diagnoser: Diagnoser, out: Collected, cluster: Cluster, namespace: str, name: str, redact: bool = True
) -> JobOutcome:
    """One collected TrainJob's outcome: its Snapshot built, redacted and diagnosed (here or in a worker)."""
    from ckpt_doctor.sources.live.collector import build_snapshot
    from ckpt_doctor.sources.redact import Redactor

    try:
        snap = build_snapshot(out, cluster, namespace, name)
        with _DIAGNOSING:
            redactor = Redactor(enabled=redact)
            redactor.snapshot(snap)
            snap.meta["redactions"] = redactor.count
            return diagnoser.one(snap, namespace, name)
    except InputError as e:
        return JobOutcome(namespace, name, error=_clean(e.message))


def _clean(text: str) -> str:
    from ckpt_doctor.sources.redact import redact_text

    return redact_text(" ".join(text.split()))


def scan_live(
    fleet: FleetCollector,
    diagnoser: Diagnoser,
    workers: int = 8,
    progress: Progress | None = None,
    redact: bool = True,
    processes: int = 1,
) -> FleetResult:
    """List, prefetch, then collect (logs) and diagnose every TrainJob, `workers` at a time; the diagnoses in
    up to `processes` worker processes (1: in this one)."""
    import dataclasses
    from contextlib import nullcontext

    from ckpt_doctor.fleet.procs import Pool, usable
    from ckpt_doctor.sources.live.client import CallError
    from ckpt_doctor.sources.live.fleet import _name, _ns

    tjs = fleet.trainjobs()
    procs = usable(processes, len(tjs))
    # forked now: after the TrainJobs are listed (so their number is known), before the scan's threads start
    pool = Pool(diagnoser, procs) if procs else None
    fleet.copies = pool is None  # what is sent to a worker is copied on the way (and never changed here)
    with pool if pool is not None else nullcontext():
        fleet.prefetch()
        result = FleetResult("live", fleet.scope.describe(), namespace_errors=list(fleet.namespace_errors))
        from ckpt_doctor.simulation import WORDS, simulated

        if simulated(v if isinstance(v := getattr(fleet.store, "version", None), str) else None):
            result.where += f" · {WORDS}"
        if progress is not None and tjs:
            progress.stage(f"diagnosing {len(tjs)} TrainJobs", total=len(tjs))
        cluster = dataclasses.replace(fleet.cluster, client=None)  # what a Snapshot needs of it, sent to workers

        def done(_f: object = None) -> None:
            if progress is not None:
                progress.advance()

        # the requests of every TrainJob's collector (its log reads, and GETs the lists could not answer) on one
        # pool: as many threads as log reads may be in flight, instead of a pool per TrainJob
        reads = ThreadPoolExecutor(max(1, fleet.in_flight or workers * fleet.log_workers),
                                   thread_name_prefix="ckpt-fleet-read")  # fmt: skip

        def one(tj: dict[str, Any]) -> JobOutcome | Future[JobOutcome]:
            ns, name = _ns(tj) or "default", _name(tj)
            try:
                got = fleet.collect(tj, reads)
                if pool is not None:  # this thread goes on collecting while a worker diagnoses
                    fut = pool.submit(got, cluster, ns, name, redact)
                    fut.add_done_callback(done)
                    return fut
                out = diagnose_collected(diagnoser, got, cluster, ns, name, redact)
            except InputError as e:
                out = JobOutcome(ns, name, error=_clean(e.message))
            except CallError as e:  # the collector turns failures into gaps; this is one it could not
                out = JobOutcome(ns, name, error=_clean(f"{e.kind}: {e.message}"))
            done()
            return out

        threads = ThreadPoolExecutor(max(1, workers), thread_name_prefix="ckpt-fleet-job")
        try:
            got = list(threads.map(one, tjs))
            result.outcomes = [Pool.result(o) if isinstance(o, Future) else o for o in got]
        except BaseException:  # Ctrl-C, SIGTERM, an error: what is queued is not started (the workers end too)
            threads.shutdown(wait=False, cancel_futures=True)
            reads.shutdown(wait=False, cancel_futures=True)
            raise
        threads.shutdown(wait=True)
        reads.shutdown(wait=True)
    result.notes = list(dict.fromkeys(fleet.store.notes))
    return result


def scan_cluster(
    diagnoser: Diagnoser,
    *,
    namespace: str | None = None,
    all_namespaces: bool = False,
    selector: str | None = None,
    context: str | None = None,
    kubeconfig: str | None = None,
    timeout: float = 15.0,
    concurrency: int = 8,
    log_bytes: int | None = None,
    quiet: bool = True,
    processes: int = 1,
) -> FleetResult:
    """Connect like kubectl and scan the TrainJobs of `namespace` (else the context's), of every namespace
    (`all_namespaces`), or those `selector` picks: what `diagnose -A | -n NS | -l SEL` and the faces that list
    TrainJobs (the MCP server, the k8sgpt analyzer) read. `processes` > 1 diagnoses in forked worker processes:
    only from a process whose other threads are quiet (a command, not a server)."""
    from ckpt_doctor.facts.logs import HEAD_BYTES
    from ckpt_doctor.sources.live import Progress, connect  # imports kubernetes: only on the live path
    from ckpt_doctor.sources.live.fleet import FleetCollector, FleetScope

    jobs = max(1, concurrency)
    in_flight = 2 * jobs  # log reads at once over all TrainJobs (the limit was 2 per TrainJob)
    window = log_bytes or HEAD_BYTES
    cluster = connect(namespace, context, kubeconfig, timeout, pool=in_flight + 8)
    scope = FleetScope(namespace=None if all_namespaces else cluster.namespace, selector=selector)
    prog = Progress(quiet=quiet)
    try:
        fleet = FleetCollector(cluster, scope, window, window, LOG_WORKERS, workers=8, progress=prog,
                               in_flight=in_flight)  # fmt: skip
        return scan_live(fleet, diagnoser, workers=jobs, progress=prog, processes=processes)
    finally:
        prog.close()


def scan_bundle(snap: Snapshot, diagnoser: Diagnoser, location: str = "") -> FleetResult:
    """Every TrainJob of one bundle, each judged as `diagnose --bundle B --trainjob NS/NAME` would."""
    result = FleetResult("bundle", location or snap.location, location=location or snap.location)
    seen: dict[tuple[str, str], int] = {}
    tjs = trainjobs(snap)
    for t in tjs:
        key = (t.namespace or "default", t.name)
        seen[key] = seen.get(key, 0) + 1
    done: set[tuple[str, str]] = set()
    for t in tjs:
        key = (t.namespace or "default", t.name)
        if key in done:
            continue
        done.add(key)
        if seen[key] > 1:
            result.outcomes.append(
                JobOutcome(*key, error=f"the bundle holds {seen[key]} different TrainJobs named {key[0]}/{key[1]}")
            )
            continue
        result.outcomes.append(diagnoser.one(snap, *key, wanted=t.name if t.namespace is None else None))
    result.notes = list(snap.notes)
    return result


def exit_code(result: FleetResult, strict: bool = False) -> int:
    """1 when any TrainJob fails at or above --fail-on; else with --strict 4 when anything could not be
    evaluated or read (a TrainJob, a namespace); else 0."""
    if any(o.exit == 1 for o in result.outcomes):
        return 1
    if strict and (any(o.exit == 4 or o.error for o in result.outcomes) or result.namespace_errors):
        return 4
    return 0

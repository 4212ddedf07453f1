"""`ckpt-doctor analyzer`: a k8sgpt custom analyzer, `schema.v1.CustomAnalyzerService/Run` over gRPC.

Each Run scans the TrainJobs the analyzer's own flags select (k8sgpt sends no namespace or selector), through
the fleet scan every face shares, and answers with the one Result the schema carries: the TrainJob that fails
worst (ranked as `diagnose -A` ranks them), whose `details` also name the other failing TrainJobs of the scope.
Nothing failing: the response holds no Result. TrainJobs that could not be read are never taken as healthy:
when nothing else fails, the call fails with UNAVAILABLE naming them. The same handler also answers
`schema.v1.AnalyzerService/Run`, the name k8sgpt v0.3.27 to v0.3.40 called.

gRPC is imported here only, and this module only when the `analyzer` verb runs.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from ckpt_doctor.analyzer import k8sgpt_schema_pb2 as pb
from ckpt_doctor.analyzer import k8sgpt_schema_pb2_grpc as pb_grpc
from ckpt_doctor.analyzer.results import Scan, TrainJobResult, result_of, results_of
from ckpt_doctor.errors import InputError, InternalError, UsageError

MAX_OTHERS = 10  # other failing TrainJobs named in details


@dataclass(frozen=True)
class Options:
    namespace: str | None = None
    all_namespaces: bool = False
    selector: str | None = None
    context: str | None = None
    kubeconfig: str | None = None
    request_timeout: float = 15.0
    concurrency: int = 8
    log_bytes: int | None = None
    trainer_version: str | None = None
    signatures: tuple[Path, ...] = field(default_factory=tuple)
    fail_on: str = "warning"


class Analyzer:
    """Scans the scope once per Run (one scan at a time: calls that arrive during a scan wait for the next)."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self._lock = threading.Lock()

    def scan(self) -> Scan:
        from ckpt_doctor.fleet.scan import Diagnoser, scan_cluster

        o = self.options
        diagnoser = Diagnoser(o.trainer_version, list(o.signatures), fail_on=o.fail_on)
        diagnoser.part = lambda diag: result_of(diag, o.fail_on)  # what each TrainJob's diagnosis is kept as
        with self._lock:
            fleet = scan_cluster(
                diagnoser,
                namespace=o.namespace,
                all_namespaces=o.all_namespaces,
                selector=o.selector,
                context=o.context,
                kubeconfig=o.kubeconfig,
                timeout=o.request_timeout,
                concurrency=o.concurrency,
                log_bytes=o.log_bytes,
            )
        return results_of(fleet)


def _details(worst: TrainJobResult, scan: Scan) -> str:
    parts = [worst.details.rstrip("\n")]
    others = scan.results[1:]
    if others:
        named = ", ".join(f"{r.name} ({r.errors[0].rule})" for r in others[:MAX_OTHERS])
        more = f" and {len(others) - MAX_OTHERS} more" if len(others) > MAX_OTHERS else ""
        parts.append(
            f"{len(others)} other TrainJob(s) in this analyzer's scope also fail: {named}{more}. The k8sgpt schema "
            "carries one Result per call: `ckpt-doctor diagnose -A` ranks them all, or run one analyzer per namespace."
        )
    if scan.unreadable:
        parts.append("Could not be diagnosed (not a pass): " + "; ".join(f"{w}: {why}" for w, why in scan.unreadable))
    return "\n".join(parts)


def encode(worst: TrainJobResult, scan: Scan, cls: type[Any] = pb.Result) -> Any:
    """The protobuf Result of `worst`, its details naming what else the scan found."""
    from ckpt_doctor.sources.redact import Redactor

    red = Redactor()  # every string once more through the one redactor, as it leaves the process
    return cls(
        kind=worst.kind,
        name=red.text(worst.name),
        error=[
            pb.ErrorDetail(
                text=red.text(f.text),
                sensitive=[pb.SensitiveData(unmasked=s.unmasked, masked=s.masked) for s in f.sensitive],
                doc=red.text(f.doc),
            )
            for f in worst.errors
        ],
        details=red.text(_details(worst, scan)),
        parent_object=red.text(worst.parent_object),
    )


class Servicer(pb_grpc.CustomAnalyzerServiceServicer):
    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer

    def _result(self, context: grpc.ServicerContext) -> Any:
        from ckpt_doctor.sources.redact import redact_text

        try:
            scan = self.analyzer.scan()
        except InputError as e:  # the cluster cannot be reached, no TrainJob can be listed
            context.abort(grpc.StatusCode.UNAVAILABLE, redact_text(" ".join(str(e).split())))
        except UsageError as e:  # the API server refused the configured --selector
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, redact_text(" ".join(str(e).split())))
        except InternalError as e:
            context.abort(grpc.StatusCode.INTERNAL, redact_text(f"internal error: {e}; please report it"))
        except Exception as e:  # a bug: one line to k8sgpt, never a traceback
            context.abort(grpc.StatusCode.INTERNAL, redact_text(f"internal error: {type(e).__name__}: {e}"))
        if scan.results:
            return encode(scan.results[0], scan)
        if scan.unreadable:
            what = "; ".join(f"{w}: {why}" for w, why in scan.unreadable)
            context.abort(
                grpc.StatusCode.UNAVAILABLE,
                redact_text(f"nothing failed among {scan.read} TrainJob(s) read, but these could not be: {what}"),
            )
        return None

    def Run(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._respond(context, pb.RunResponse)

    def _respond(self, context: grpc.ServicerContext, response: type[Any]) -> Any:
        result = self._result(context)
        return response() if result is None else response(result=result)


class _LegacyServicer(pb_grpc.AnalyzerServiceServicer):
    """`schema.v1.AnalyzerService/Run` (k8sgpt v0.3.27 to v0.3.40): the same answer under the old names."""

    def __init__(self, servicer: Servicer) -> None:
        self.servicer = servicer

    def Run(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self.servicer._respond(context, pb.AnalyzerRunResponse)


def address(host: str, port: int) -> str:
    """gRPC's form of HOST:PORT: every address for an empty host, brackets around IPv6."""
    if not host:
        return f"[::]:{port}"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def start(options: Options, host: str, port: int, workers: int = 4) -> tuple[grpc.Server, int]:
    """Start serving; returns the server and the port bound (for port 0, the one the system chose)."""
    server = grpc.server(ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ckpt-analyzer"))
    servicer = Servicer(Analyzer(options))
    pb_grpc.add_CustomAnalyzerServiceServicer_to_server(servicer, server)
    pb_grpc.add_AnalyzerServiceServicer_to_server(_LegacyServicer(servicer), server)
    try:
        bound = server.add_insecure_port(address(host, port))
    except RuntimeError:  # grpcio raises "Failed to bind …"; older versions return 0
        bound = 0
    if not bound:
        raise InputError(
            f"cannot listen on {address(host, port)}: the port is taken, or the address is not this machine's"
        )
    server.start()
    return server, bound

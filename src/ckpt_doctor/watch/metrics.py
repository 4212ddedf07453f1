"""The watcher's Prometheus metrics, named the kube-state-metrics way.

Per TrainJob (labels `namespace`, `trainjob`), produced on each scrape from the registry by a custom
collector, so a TrainJob that is deleted has no series at the next scrape:

- `ckpt_doctor_trainjob_info{runtime,uid}` 1: static properties;
- `ckpt_doctor_trainjob_state{state}` and `ckpt_doctor_trainjob_resume_status{status}`: StateSets (one
  series per state, 1 for the current one, 0 for the others);
- `ckpt_doctor_trainjob_attempt`: the number of the current attempt (1 for the first start);
- `ckpt_doctor_trainjob_last_checkpoint_step`, `…_last_checkpoint_timestamp_seconds`,
  `…_save_interval_seconds`, `…_lost_steps` (a lower bound when `…_lost_steps_complete` is 0): only
  when known: an unknown figure has no series rather than a 0;
- `ckpt_doctor_finding{rule,severity}`: the failing findings, the value the number of subjects failing;
- `ckpt_doctor_trainjob_last_scan_timestamp_seconds`, `ckpt_doctor_trainjob_scan_failed`.

The watcher's own: `ckpt_doctor_scan_errors_total{stage}`, `ckpt_doctor_scan_duration_seconds` (a
histogram of re-diagnoses), `ckpt_doctor_scans_total`, `ckpt_doctor_pending_trainjobs`,
`ckpt_doctor_watch_relists_total{resource}`, `ckpt_doctor_watch_reconnects_total{resource}`,
`ckpt_doctor_watch_errors_total{resource}`, `ckpt_doctor_trainjobs`.
No message text ever goes into a label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ckpt_doctor.fleet.summary import RESUME_STATES, STATES
from ckpt_doctor.watch.state import Registry

JOB = ("namespace", "trainjob")
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class TrainJobCollector(Collector):
    """Yields every TrainJob's series from the registry at scrape time."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def describe(self) -> list[Metric]:
        return []  # no describe-time collect: the series come and go with the TrainJobs

    def collect(self) -> Iterator[Metric]:
        def g(name: str, doc: str, labels: Sequence[str] = ()) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, doc, labels=[*JOB, *labels])

        info = g("ckpt_doctor_trainjob_info", "A TrainJob the watcher watches (1), its runtime and uid",
                 ("runtime", "uid"))  # fmt: skip
        state = g("ckpt_doctor_trainjob_state", "The TrainJob's state (a StateSet: 1 for the current one)",
                  ("state",))  # fmt: skip
        resume = g(
            "ckpt_doctor_trainjob_resume_status",
            "How the latest attempt began (a StateSet): resumed, older_checkpoint, fresh_start (step 0 although an "
            "earlier attempt had trained), none (nothing to resume), unknown",
            ("status",),
        )
        attempt = g("ckpt_doctor_trainjob_attempt", "The number of the current attempt (1 for the first start)")
        step = g("ckpt_doctor_trainjob_last_checkpoint_step", "The newest step saved by a complete checkpoint")
        ckpt_ts = g(
            "ckpt_doctor_trainjob_last_checkpoint_timestamp_seconds",
            "When the newest complete checkpoint was saved (from its log line), seconds since the epoch",
        )
        interval = g(
            "ckpt_doctor_trainjob_save_interval_seconds",
            "The median time between the latest attempt's complete checkpoints",
        )
        lost = g("ckpt_doctor_trainjob_lost_steps", "Training steps lost to restarts (redone), a lower bound when "
                 "ckpt_doctor_trainjob_lost_steps_complete is 0")  # fmt: skip
        lost_ok = g("ckpt_doctor_trainjob_lost_steps_complete", "1 when every restart's loss could be measured")
        finding = GaugeMetricFamily(
            "ckpt_doctor_finding",
            "A failing finding of the TrainJob's diagnosis; the value is the number of subjects it fails for",
            labels=[*JOB, "rule", "severity"],
        )
        scanned = g("ckpt_doctor_trainjob_last_scan_timestamp_seconds", "When the TrainJob was last diagnosed")
        failed = g("ckpt_doctor_trainjob_scan_failed", "1 when the last attempt to diagnose the TrainJob failed "
                   "(the other series are from the diagnosis before)")  # fmt: skip
        jobs = GaugeMetricFamily("ckpt_doctor_trainjobs", "TrainJobs the watcher watches")
        view = self.registry.view()
        jobs.add_metric([], len(view))
        for (ns, name), st in view:
            who = [ns, name]
            info.add_metric([*who, st.runtime, st.uid], 1)
            if st.scanned_at is not None:
                scanned.add_metric(who, st.scanned_at)
                failed.add_metric(who, 1 if st.scan_failed else 0)
            f = st.figures
            if f is None:
                continue
            for s in STATES:
                state.add_metric([*who, s], 1 if f.state == s else 0)
            for s in RESUME_STATES:
                resume.add_metric([*who, s], 1 if f.resume_status == s else 0)
            attempt.add_metric(who, f.attempts)
            _maybe(step, who, f.last_checkpoint_step)
            _maybe(ckpt_ts, who, f.last_checkpoint_time)
            _maybe(interval, who, f.save_interval_seconds)
            if f.lost_steps is not None:
                lost.add_metric(who, f.lost_steps)
                lost_ok.add_metric(who, 1 if f.lost_complete else 0)
            for (rule, severity), n in sorted(f.failed.items()):
                finding.add_metric([*who, rule, severity], n)
        yield from (jobs, info, state, resume, attempt, step, ckpt_ts, interval, lost, lost_ok, finding, scanned,
                    failed)  # fmt: skip


def _maybe(fam: GaugeMetricFamily, labels: list[str], value: float | None) -> None:
    if value is not None:
        fam.add_metric(labels, value)


class WatchCounters(Collector):
    """The informers' counters (relists, reconnects, errors), read from them at scrape time."""

    def __init__(self, informers: Callable[[], Sequence[Any]]) -> None:
        self.informers = informers

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        relists = CounterMetricFamily("ckpt_doctor_watch_relists", "Lists made again after 410 Gone",
                                      labels=["resource"])  # fmt: skip
        reconnects = CounterMetricFamily("ckpt_doctor_watch_reconnects", "Watches opened again after they ended",
                                         labels=["resource"])  # fmt: skip
        errors = CounterMetricFamily("ckpt_doctor_watch_errors", "Failed lists and watches", labels=["resource"])
        for inf in self.informers():
            r = [inf.kind.plural]
            relists.add_metric(r, inf.relists)
            reconnects.add_metric(r, inf.reconnects)
            errors.add_metric(r, inf.errors)
        yield from (relists, reconnects, errors)


class Metrics:
    """The registry the watcher serves, with its own counters."""

    def __init__(self, registry: Registry, informers: Callable[[], Sequence[Any]], pending: Callable[[], int]) -> None:
        disable_created_metrics()  # no `_created` series: kube-state-metrics has none, dashboards need none
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(TrainJobCollector(registry))
        self.registry.register(WatchCounters(informers))
        self.scan_errors = Counter(
            "ckpt_doctor_scan_errors",
            "Re-diagnoses that failed, by stage (collect: reading the cluster, diagnose: the engine, event: "
            "writing the Event)",
            ["stage"],
            registry=self.registry,
        )
        for stage in ("collect", "diagnose", "event"):
            self.scan_errors.labels(stage)
        self.scans = Counter("ckpt_doctor_scans", "TrainJobs diagnosed", registry=self.registry)
        self.duration = Histogram(
            "ckpt_doctor_scan_duration_seconds",
            "Time of one re-diagnosis (a batch of TrainJobs of one namespace: lists, logs, diagnoses)",
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_Pending(pending))


class _Pending(Collector):
    def __init__(self, depth: Callable[[], int]) -> None:
        self.depth = depth

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily("ckpt_doctor_pending_trainjobs", "TrainJobs waiting to be diagnosed again",
                                value=self.depth())  # fmt: skip


def exposition(registry: CollectorRegistry, accept: str = "") -> tuple[bytes, str]:
    """The scrape body and its content type (OpenMetrics when the scraper asks for it)."""
    from prometheus_client.exposition import choose_encoder

    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type

"""`ckpt-doctor watch`: a long-running, read-only watcher that re-diagnoses TrainJobs as they change.

- `jlog`: structured logs, one JSON object per line on stderr;
- `informer`: list, then watch one kind (resourceVersion, bookmarks, a new list on 410 Gone, back-off);
- `state`: what is kept per TrainJob (the figures the metrics need) and the debounced queue of changes;
- `routing`: which TrainJob a changed JobSet, pod or event belongs to;
- `metrics`: the Prometheus collector (kube-state-metrics naming) and the watcher's own counters;
- `events`: the optional Kubernetes Event written on a TrainJob when its verdict changes;
- `http`: /metrics, /healthz and /readyz;
- `watcher`: the process that wires them together and stops cleanly on SIGTERM.
"""

"""The live source: read one TrainJob and everything around it from a cluster, the way kubectl would.

`client` is the only module of ckpt-doctor that imports `kubernetes`, and only inside functions
(it takes ~0.8 s to import), so importing this package stays cheap until a cluster is contacted.

- `kinds`: what is read (kinds, API paths, verbs): also the source of `ckpt-doctor rbac`;
- `client`: kubeconfig like kubectl, one request with a timeout, errors as `CallError`;
- `logs`: head and tail windows of current and previous container logs;
- `progress`: the progress display of a long collection;
- `collector`: one TrainJob, its runtime, JobSet, Jobs, pods, events, storage and logs → Snapshot.
"""

from ckpt_doctor.sources.live.client import Api, CallError, Cluster, connect, gap_reason
from ckpt_doctor.sources.live.collector import Collected, Collector, collect_live, list_trainjobs, split_target
from ckpt_doctor.sources.live.kinds import READS, TRAINER_DEPLOYMENT, Kind, Read
from ckpt_doctor.sources.live.logs import (
    LogReader,
    LogResult,
    container_instances,
    log_gap_name,
    skipped_marker,
    window_content,
)
from ckpt_doctor.sources.live.progress import Progress

__all__ = [
    "READS",
    "TRAINER_DEPLOYMENT",
    "Api",
    "CallError",
    "Cluster",
    "Collected",
    "Collector",
    "Kind",
    "LogReader",
    "LogResult",
    "Progress",
    "Read",
    "collect_live",
    "connect",
    "container_instances",
    "gap_reason",
    "list_trainjobs",
    "log_gap_name",
    "skipped_marker",
    "split_target",
    "window_content",
]

"""What the live collector reads: kinds, their API paths, and the verbs (also the source of `ckpt-doctor rbac`)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

# -- what is read (also the source of `ckpt-doctor rbac`) ---------------------------------------------

TRAINER_DEPLOYMENT = ("kubeflow-system", "kubeflow-trainer-controller-manager")  # read for its version


@dataclass(frozen=True)
class Kind:
    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def gap(self) -> str:
        """The `notCollected` name of this resource (facts map these names to not_evaluated reasons)."""
        return self.plural

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name, safe='')}"
        if sub:
            base += f"/{sub}"
        return base


TRAINJOB = Kind("TrainJob", "trainer.kubeflow.org", "v1alpha1", "trainjobs")
TRAININGRUNTIME = Kind("TrainingRuntime", "trainer.kubeflow.org", "v1alpha1", "trainingruntimes")
CLUSTERTRAININGRUNTIME = Kind(
    "ClusterTrainingRuntime", "trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", namespaced=False
)
JOBSET = Kind("JobSet", "jobset.x-k8s.io", "v1alpha2", "jobsets")
JOB = Kind("Job", "batch", "v1", "jobs")
POD = Kind("Pod", "", "v1", "pods")
EVENT = Kind("Event", "", "v1", "events")
PVC = Kind("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims")
PV = Kind("PersistentVolume", "", "v1", "persistentvolumes", namespaced=False)
STORAGECLASS = Kind("StorageClass", "storage.k8s.io", "v1", "storageclasses", namespaced=False)
NODE = Kind("Node", "", "v1", "nodes", namespaced=False)
CONFIGMAP = Kind("ConfigMap", "", "v1", "configmaps")
WORKLOAD = Kind("Workload", "kueue.x-k8s.io", "v1beta1", "workloads")
DEPLOYMENT = Kind("Deployment", "apps", "v1", "deployments")


@dataclass(frozen=True)
class Read:
    """One kind of read the collector makes, with the verbs it uses and why (for least-privilege RBAC)."""

    kind: Kind
    verbs: tuple[str, ...]
    why: str
    sub: str | None = None
    follow_only: tuple[str, ...] = ()  # verbs only `collect --follow` needs
    optional: bool = False  # missing it never stops a diagnosis (e.g. the Trainer version probe)

    @property
    def resource(self) -> str:
        return f"{self.kind.plural}/{self.sub}" if self.sub else self.kind.plural


READS: tuple[Read, ...] = (
    Read(TRAINJOB, ("get", "list"), "the TrainJob (list: to name the ones that exist)", follow_only=("watch",)),
    Read(TRAININGRUNTIME, ("get",), "the runtime the TrainJob references"),
    Read(CLUSTERTRAININGRUNTIME, ("get",), "the cluster runtime the TrainJob references"),
    Read(JOBSET, ("get",), "the JobSet the TrainJob created", follow_only=("list", "watch")),
    Read(JOB, ("list",), "the JobSet's Jobs, by label", follow_only=("watch",)),
    Read(POD, ("list",), "the Jobs' pods, by label", follow_only=("watch",)),
    Read(POD, ("get",), "container logs, current and previous", sub="log"),
    Read(EVENT, ("list",), "events of the TrainJob, JobSet, Jobs, pods and PVCs", follow_only=("watch",)),
    Read(PVC, ("list",), "the PVCs the pods mount"),
    Read(CONFIGMAP, ("get",), "the runtime snapshot (v2.3) and the ConfigMaps the trainer mounts"),
    Read(WORKLOAD, ("list",), "the Kueue Workload, if Kueue is installed", optional=True),
    Read(PV, ("get",), "the volumes bound to those PVCs"),
    Read(STORAGECLASS, ("get",), "their storage classes"),
    Read(NODE, ("get", "list"), "the nodes the pods ran on"),
    Read(DEPLOYMENT, ("get",), "the Trainer controller's image tag (its version)", optional=True),
)


def runtime_kind(kind: str) -> Kind:
    """The kind a TrainJob's runtimeRef.kind names (scope.runtime_ref; the Trainer reads any other value as
    ClusterTrainingRuntime)."""
    return TRAININGRUNTIME if kind == "TrainingRuntime" else CLUSTERTRAININGRUNTIME

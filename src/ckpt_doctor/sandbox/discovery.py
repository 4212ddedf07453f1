"""The resource types the fake serves, and their (legacy, non-aggregated) discovery documents."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
META_FIELDS = ("metadata.name", "metadata.namespace")
SUBRESOURCE_VERBS = {"log": ("get",), "status": ("get", "patch", "update")}


@dataclass(frozen=True)
class ResourceType:
    """One served resource, as in an APIResourceList entry plus what the store needs to know."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()  # extra field-selector labels; "label=path" when they differ
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    crd: bool = False  # custom resources list items with apiVersion/kind and word some errors differently
    storage: str = ""  # shared store name when two group versions serve the same objects (events)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """GroupResource.String(): ``pods``, ``trainjobs.trainer.kubeflow.org``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def store(self) -> str:
        return self.storage or self.qualified

    def field_paths(self) -> dict[str, str]:
        """Supported field-selector labels mapped to dotted paths in the served object."""
        out = {}
        for spec in (*META_FIELDS, *self.fields):
            label, _, path = spec.partition("=")
            out[label] = path or label
        return out


_OBJREF = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
_POD_FIELDS = (
    "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
    "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName",
)
_CORE_EVENT_FIELDS = (
    *(f"involvedObject.{f}" for f in _OBJREF), "reason", "reportingComponent", "source=source.component",
    "type",
)
_EVENT_FIELDS = (*(f"regarding.{f}" for f in _OBJREF), "reason", "reportingController", "type")
_NO_COLLECTION = tuple(v for v in ALL_VERBS if v != "deletecollection")

RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "pods", "Pod", short_names=("po",), subresources=("log", "status"),
                 fields=_POD_FIELDS, categories=("all",)),
    ResourceType("", "v1", "events", "Event", short_names=("ev",), fields=_CORE_EVENT_FIELDS),
    ResourceType("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", short_names=("pvc",),
                 subresources=("status",)),
    ResourceType("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False, short_names=("pv",),
                 subresources=("status",)),
    ResourceType("", "v1", "nodes", "Node", namespaced=False, short_names=("no",), subresources=("status",),
                 fields=("spec.unschedulable",)),
    ResourceType("", "v1", "configmaps", "ConfigMap", short_names=("cm",)),
    ResourceType("", "v1", "namespaces", "Namespace", namespaced=False, short_names=("ns",),
                 subresources=("status",), fields=("status.phase",), verbs=_NO_COLLECTION),
    ResourceType("", "v1", "secrets", "Secret", fields=("type",)),
    ResourceType("batch", "v1", "jobs", "Job", subresources=("status",), fields=("status.successful",),
                 categories=("all",)),
    ResourceType("events.k8s.io", "v1", "events", "Event", short_names=("ev",), fields=_EVENT_FIELDS,
                 storage="events"),
    ResourceType("storage.k8s.io", "v1", "storageclasses", "StorageClass", namespaced=False,
                 short_names=("sc",)),
    ResourceType("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob", short_names=("tj",),
                 subresources=("status",), crd=True),
    ResourceType("trainer.kubeflow.org", "v1alpha1", "trainingruntimes", "TrainingRuntime", crd=True),
    ResourceType("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", "ClusterTrainingRuntime",
                 namespaced=False, crd=True),
    ResourceType("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", subresources=("status",), crd=True),
    ResourceType("kueue.x-k8s.io", "v1beta1", "workloads", "Workload", short_names=("wl",),
                 subresources=("status",), crd=True),
    ResourceType("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview",
                 namespaced=False, verbs=("create",)),
)


def version_info(git_version: str) -> dict[str, Any]:
    """The ``/version`` document."""
    major, minor = git_version.lstrip("v").split(".")[:2]
    return {
        "major": major, "minor": minor, "gitVersion": git_version, "gitCommit": "0" * 40,
        "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.24.0",
        "compiler": "gc", "platform": "linux/amd64",
    }


def core_versions(address: str) -> dict[str, Any]:
    """The ``/api`` document (APIVersions)."""
    return {
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def _group_body(types: Iterable[ResourceType], name: str) -> dict[str, Any] | None:
    versions = list(dict.fromkeys(t.version for t in types if t.group == name))
    if not versions:
        return None
    gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": gvs, "preferredVersion": gvs[0]}


def group_list(types: Iterable[ResourceType]) -> dict[str, Any]:
    """The ``/apis`` document (APIGroupList), groups in registration order."""
    types = list(types)
    names = dict.fromkeys(t.group for t in types if t.group)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group_body(types, n) for n in names]}


def group(types: Iterable[ResourceType], name: str) -> dict[str, Any] | None:
    """The ``/apis/{group}`` document (APIGroup), or None if the group is not served."""
    body = _group_body(types, name)
    return {"kind": "APIGroup", "apiVersion": "v1", **body} if body else None


def resource_list(types: Iterable[ResourceType], group: str, version: str) -> dict[str, Any] | None:
    """The ``/api/v1`` or ``/apis/{group}/{version}`` document (APIResourceList), or None."""
    served = [t for t in types if (t.group, t.version) == (group, version)]
    if not served:
        return None
    resources: list[dict[str, Any]] = []
    for t in served:
        entry: dict[str, Any] = {
            "name": t.plural, "singularName": t.kind.lower(), "namespaced": t.namespaced,
            "kind": t.kind, "verbs": list(t.verbs),
        }
        if t.short_names:
            entry["shortNames"] = list(t.short_names)
        if t.categories:
            entry["categories"] = list(t.categories)
        resources.append(entry)
        for sub in t.subresources:
            resources.append({"name": f"{t.plural}/{sub}", "singularName": "", "namespaced": t.namespaced,
                              "kind": t.kind, "verbs": list(SUBRESOURCE_VERBS[sub])})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": served[0].api_version,
            "resources": resources}

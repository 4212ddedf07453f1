"""Clusters of many TrainJobs for the fleet tests: the example stories side by side, and crowds of one story.

`mixed(kube)` serves every story of tests/stories.py, each in its own namespace (`story-<name>`), plus
a namespace where TrainJobs whose names prefix one another (`job-1`, `job-10`) share events and PVCs.
`crowd(kube, jobs, namespaces, pods)` serves the same live scenario many times (requests, benches).
"""

from __future__ import annotations

import copy
from typing import Any

from tests.fakeapi.server import FakeKube
from tests.live.scenario import Scenario as LiveScenario
from tests.stories import STORIES

SHARED_NS = "shared"


def _relocate(objs: list[dict[str, Any]], ns: str) -> list[dict[str, Any]]:
    """The same objects in namespace `ns`; cluster-scoped PersistentVolumes renamed per namespace."""
    out = []
    for o in objs:
        o = copy.deepcopy(o)
        meta = o.setdefault("metadata", {})
        if meta.get("namespace"):
            meta["namespace"] = ns
        for key in ("involvedObject", "regarding"):
            if isinstance(o.get(key), dict) and o[key].get("namespace"):
                o[key]["namespace"] = ns
        if o.get("kind") == "PersistentVolume":
            meta["name"] = f"{meta['name']}-{ns}"
            ref = (o.get("spec") or {}).get("claimRef")
            if isinstance(ref, dict):
                ref["namespace"] = ns
        if o.get("kind") == "PersistentVolumeClaim" and (o.get("spec") or {}).get("volumeName"):
            o["spec"]["volumeName"] = f"{o['spec']['volumeName']}-{ns}"
        out.append(o)
    return out


def load_story(kube: FakeKube, story_name: str, ns: str) -> tuple[str, str]:
    story = next(s for s in STORIES if s.name == story_name)
    sc = story.build()
    objs, logs = sc.objects()
    kube.add_many(_relocate(objs, ns))
    for (pod, container, previous), text in logs.items():
        kube.set_log(ns, pod, container, text, previous=previous)
    return ns, sc.name


def load_live(kube: FakeKube, name: str, ns: str, pods: int = 2) -> tuple[str, str]:
    sc = LiveScenario(pods=pods, namespace=ns, name=name)
    sc.load(kube)
    return ns, name


def mixed(kube: FakeKube) -> list[tuple[str, str]]:
    """Every story in its own namespace, and prefix-sharing live jobs in one: the TrainJobs served."""
    jobs = [load_story(kube, s.name, f"story-{s.name}"[:63]) for s in STORIES]
    for name in ("job-1", "job-10", "job-2"):
        jobs.append(load_live(kube, name, SHARED_NS, pods=2))
    jobs.append((SHARED_NS, "other-run"))  # the live scenario's neighbour TrainJob
    return sorted(set(jobs))


def crowd(kube: FakeKube, jobs: int, namespaces: int = 1, pods: int = 8) -> list[tuple[str, str]]:
    """`jobs` copies of the live scenario spread over `namespaces` namespaces."""
    out = []
    for i in range(jobs):
        ns = f"fleet-{i % namespaces}"
        out.append(load_live(kube, f"train-{i:04d}", ns, pods=pods))
    return out

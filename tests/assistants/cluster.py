"""The one live cluster the assistant faces (MCP server, k8sgpt analyzer) are tested against.

Today: tests/fakeapi's FakeKube, through the real `kubernetes` client, serving a healthy story and broken ones
from tests/stories.py (the source of examples/), each in its own namespace, plus the planted-secret incident of
tests/security (namespace team-a, TrainJob sft-secrets) behind a kubeconfig that plants more. When
`ckpt-doctor sandbox` lands, `live_cluster` starts it instead: the tests only read `LiveCluster`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.fakeapi.server import FakeKube
from tests.fleet.cluster import load_story
from tests.security.corpus import NAME as SECRETS_NAME
from tests.security.corpus import NS as SECRETS_NS
from tests.security.corpus import Corpus, Plant, build, kubeconfig
from tests.stories import STORIES

# a healthy story and broken ones whose symptom and cause fail at warning or above
SCENARIOS = ("healthy-resume", "emptydir-fresh-start", "missing-ancestor-label", "final-checkpoint-missing")


@dataclass(frozen=True)
class Job:
    scenario: str
    namespace: str
    name: str
    expect: tuple[str, ...]  # rule ids that must fail; () for a healthy one

    @property
    def target(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class LiveCluster:
    kubeconfig: Path
    jobs: dict[str, Job]  # scenario -> the TrainJob that plays it
    bundle: Path  # the planted-secret incident as a hand-made bundle (the same objects the cluster serves)
    corpus: Corpus | None = None  # its planted secrets (tests plant more: explain_text, lint_manifest)

    @property
    def plants(self) -> list[Plant]:
        return self.corpus.plants if self.corpus is not None else []

    def healthy(self) -> list[Job]:
        return [j for j in self.jobs.values() if not j.expect]

    def broken(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.expect and j.scenario != "secrets"]


@contextlib.contextmanager
def live_cluster(work: Path) -> Iterator[LiveCluster]:
    corpus = build()
    work.mkdir(parents=True, exist_ok=True)
    bundle = corpus.scenario.write(work / "secrets-bundle")
    with FakeKube() as kube:
        jobs: dict[str, Job] = {}
        for story in STORIES:
            if story.name in SCENARIOS:
                ns, name = load_story(kube, story.name, f"story-{story.name}"[:63])
                jobs[story.name] = Job(story.name, ns, name, tuple(story.expect))
        kube.load_bundle(bundle)
        jobs["secrets"] = Job("secrets", SECRETS_NS, SECRETS_NAME, ("<any>",))
        kc = kubeconfig(work / "kubeconfig", kube.url, corpus)  # current context: the fake server, ns team-a
        yield LiveCluster(kc, jobs, bundle, corpus)
    assert kube.errors == [], "the fake API server hit a bug"

"""The one live cluster the assistant faces (MCP server, k8sgpt analyzer) are tested against.

`ckpt-doctor sandbox` (ckpt_doctor.sandbox.cluster.Sandbox, in-process), through the real `kubernetes` client:
its six scenarios (a healthy resumable job and five broken ones, namespace `sandbox`, their trainers running
while the tests talk to them), plus the planted-secret incident of tests/security (namespace team-a, TrainJob
sft-secrets) loaded into the same API, behind a kubeconfig that plants more. Each sandbox TrainJob also carries
the label `scenario=<name>`, so that an analyzer can be scoped to one of them (k8sgpt sends no scope: the
analyzer's own -n/-l flags decide). The tests only read `LiveCluster`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ckpt_doctor.sandbox.cluster import Sandbox
from ckpt_doctor.sandbox.scenarios import SCENARIOS
from tests.security.corpus import NAME as SECRETS_NAME
from tests.security.corpus import NS as SECRETS_NS
from tests.security.corpus import Corpus, Plant, build, kubeconfig

SCENARIO_LABEL = "scenario"


@dataclass(frozen=True)
class Job:
    scenario: str
    namespace: str
    name: str
    expect: tuple[str, ...]  # rule ids that must fail; () for a healthy one
    selector: str | None = None  # a label selector that picks this TrainJob alone in its namespace

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
    with Sandbox(kubeconfig=work / "sandbox.kubeconfig", speed=4.0) as sb:
        jobs: dict[str, Job] = {}
        for spec in SCENARIOS:
            tj = sb.api.get("trainjobs", sb.namespace, spec.name)
            assert tj is not None, spec.name
            tj.setdefault("metadata", {}).setdefault("labels", {})[SCENARIO_LABEL] = spec.name
            sb.api.update(tj)
            jobs[spec.name] = Job(spec.name, sb.namespace, spec.name, spec.rules, f"{SCENARIO_LABEL}={spec.name}")
        sb.api.load_bundle(bundle)
        jobs["secrets"] = Job("secrets", SECRETS_NS, SECRETS_NAME, ("<any>",))
        kc = kubeconfig(work / "kubeconfig", sb.url, corpus)  # current context: the sandbox, ns team-a
        yield LiveCluster(kc, jobs, bundle, corpus)
        assert sb.errors() == [], sb.errors()[0]

"""Less data never flips a verdict to pass (or a pass to a failure), offline and live (issue 9)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ckpt_doctor.coverage import RULE_KINDS, plural
from tests.clirun import run_cli
from tests.coverage.less_data import Removal, diagnose_dir, flips, read_objects, removals, write_without
from tests.live.conftest import REAL_KUBECONFIG
from tests.stories import STORIES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CASES = [(s.name, r) for s in STORIES for r in removals(EXAMPLES / s.name)]


@pytest.mark.parametrize(("example", "removal"), CASES, ids=[f"{e}-{r.what}" for e, r in CASES])
def test_removing_data_never_flips_a_verdict(example: str, removal: Removal, tmp_path: Path) -> None:
    before = diagnose_dir(EXAMPLES / example)
    after = diagnose_dir(write_without(EXAMPLES / example, removal, tmp_path / "b"))
    assert flips(before, after) == []


# -- live: the same kinds forbidden by the API server -------------------------------------------------
RESOURCES = {k: plural(k) for k in RULE_KINDS if k != "TrainJob"}  # kind -> the API's resource name


def _live_cases() -> list[tuple[str, str]]:
    rng = random.Random(9)  # a fixed sample: every resource, spread over the examples
    out = []
    for s in STORIES:
        kinds = sorted({o["kind"] for o in read_objects(EXAMPLES / s.name)} & set(RESOURCES))
        out += [(s.name, RESOURCES[k]) for k in kinds] + [(s.name, "pods/log")]
    picked = {r: [c for c in out if c[1] == r] for r in sorted({c[1] for c in out})}
    return sorted({rng.choice(cs) for cs in picked.values()} | set(rng.sample(out, 10)))


def _live(example: str, kc: Path, target: str, version: str | None) -> dict[tuple[str, str, str | None], str]:
    argv = ["diagnose", target, "--kubeconfig", str(kc), "-o", "json"]
    if version:
        argv += ["--trainer-version", version]
    got = run_cli(argv)
    assert got.rc in (0, 1, 4), got.err
    return {
        (f["rule"], str((f.get("subject") or {}).get("kind")), (f.get("subject") or {}).get("name")): f["status"]
        for f in got.json()["findings"]
    }


@pytest.mark.parametrize(("example", "resource"), _live_cases(), ids=lambda x: str(x))
def test_forbidding_data_live_never_flips_a_verdict(example: str, resource: str, tmp_path: Path) -> None:
    if REAL_KUBECONFIG:
        pytest.skip("injects faults: fake API server only")
    from ckpt_doctor.sources.bundle import open_bundle
    from tests.fakeapi.server import FakeKube

    with open_bundle(EXAMPLES / example) as snap:
        t = snap.meta["target"]
        version = (snap.meta.get("cluster") or {}).get("trainerVersion")
    target = f"{t['namespace']}/{t['name']}"
    with FakeKube() as kube:
        kube.load_bundle(EXAMPLES / example)
        kc = kube.kubeconfig(tmp_path / "kc", namespace=t["namespace"])
        before = _live(example, kc, target, version)
        verb = "get" if resource in ("pods/log", "trainingruntimes", "clustertrainingruntimes", "jobsets") else None
        kube.fault(verb, resource, status=403)
        after = _live(example, kc, target, version)
        assert kube.errors == []
    assert flips(before, after) == []

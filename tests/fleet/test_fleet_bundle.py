"""`diagnose --bundle B --all`: every TrainJob of a bundle, each judged as `--trainjob NS/NAME` judges it, and
the fleet's faces (table, markdown, json, sarif, junit) over them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.clirun import run_cli
from tests.fleet.cluster import _relocate
from tests.live.scenario import Scenario as LiveScenario
from tests.stories import STORIES


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One story in team-a, two live-scenario jobs and their neighbour in team-b: four TrainJobs."""
    root = tmp_path_factory.mktemp("fleet-bundle")
    objs: list[dict[str, Any]] = []
    logs: dict[tuple[str, str, bool], bytes] = {}
    story = next(s for s in STORIES if s.name == "llamafactory-overwrite-output-dir").build()
    s_objs, s_logs = story.objects()
    objs += s_objs
    logs.update({k: v.encode() for k, v in s_logs.items()})
    for name in ("job-a", "job-b"):
        sc = LiveScenario(pods=2, namespace="team-b", name=name)
        have = {(x["kind"], x["metadata"].get("name")) for x in objs if x["metadata"].get("namespace") == "team-b"}
        objs += [o for o in _relocate(sc.objects(), "team-b") if (o["kind"], o["metadata"].get("name")) not in have]
        logs.update({(pod, c, prev): data for (_ns, pod, c, prev), data in sc.logs().items()})
    y = YAML(typ="safe", pure=True)
    with (root / "objects.yaml").open("w") as f:
        y.dump_all(objs, f)
    (root / "bundle.yaml").write_text(
        "apiVersion: ckpt-doctor/v1\nkind: Bundle\ncollectedAt: '2026-11-30T10:00:00Z'\n"
        "cluster: {context: prod, trainerVersion: v2.1.0}\n"
    )
    for (pod, container, previous), data in logs.items():
        d = root / "logs" / pod
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{container}{'.previous' if previous else ''}.log").write_bytes(data)
    return root


JOBS = [("team-a", "sft-resumable"), ("team-b", "job-a"), ("team-b", "job-b"), ("team-b", "other-run")]


def test_each_trainjob_is_judged_as_trainjob_flag_judges_it(bundle: Path) -> None:
    got = run_cli(["diagnose", "--bundle", str(bundle), "--all", "-o", "json"])
    assert got.rc == 1, got.err
    doc = got.json()
    docs = {(d["target"]["namespace"], d["target"]["name"]): d for d in doc["diagnoses"]}
    assert sorted(docs) == JOBS
    for ns, name in JOBS:
        one = run_cli(["diagnose", "--bundle", str(bundle), "--trainjob", f"{ns}/{name}", "-o", "json"])
        assert one.rc in (0, 1), one.err
        assert docs[(ns, name)] == one.json(), f"{ns}/{name}"
    assert doc["mode"] == "fleet" and doc["source"] == "bundle"
    assert doc["summary"]["trainjobs"] == 4 and doc["summary"]["namespaces"] == 2
    top = doc["trainjobs"][0]
    assert top["worst"]["severity"] == "critical" and top["stepsLost"]["steps"] is not None


def test_the_table_is_ranked_by_worst_finding_then_steps_lost(bundle: Path) -> None:
    got = run_cli(["diagnose", "--bundle", str(bundle), "--all"])
    lines = got.out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("NAMESPACE"))
    assert lines[head].split() == ["NAMESPACE", "TRAINJOB", "STATE", "ATTEMPTS", "STEPS", "LOST", "WORST", "FINDING",
                                   "CAUSE"]  # fmt: skip
    rows = [ln.split() for ln in lines[head + 1 : head + 5]]
    assert rows[0][:2] == ["team-a", "sft-resumable"]  # critical, 340 steps lost
    assert rows[0][5:8] == ["fresh-start-after-restart", "[critical]", "llamafactory-overwrite-output-dir"]
    assert rows[-1][:2] == ["team-b", "other-run"]  # only a warning
    assert "4 TrainJobs in 2 namespaces" in got.out


def test_markdown_sarif_and_junit(bundle: Path) -> None:
    md = run_cli(["diagnose", "--bundle", str(bundle), "--all", "-o", "markdown"]).out
    assert md.startswith("# ckpt-doctor fleet scan") and "| Namespace | TrainJob | State |" in md
    sarif = json.loads(run_cli(["diagnose", "--bundle", str(bundle), "--all", "-o", "sarif"]).out)
    (run,) = sarif["runs"]  # one run for all TrainJobs
    rules = run["tool"]["driver"]["rules"]
    assert {r["properties"]["trainjob"] for r in run["results"]} == {f"{ns}/{n}" for ns, n in JOBS}
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in run["results"])
    assert run["properties"]["summary"]["trainjobs"] == 4
    xml = run_cli(["diagnose", "--bundle", str(bundle), "--all", "-o", "junit"]).out
    root = ET.fromstring(xml)
    suites = root.findall("testsuite")
    assert suites[0].get("name") == "ckpt-doctor diagnose team-a/sft-resumable"
    assert len(suites) == 4
    assert int(root.get("failures", "0")) == sum(int(s.get("failures", "0")) for s in suites) > 0


def test_a_bundle_with_one_trainjob_named_twice_is_a_row(tmp_path: Path, bundle: Path) -> None:
    import shutil

    b = tmp_path / "b"
    shutil.copytree(bundle, b)
    y = YAML(typ="safe", pure=True)
    tj = next(o for o in y.load_all((b / "objects.yaml").read_text()) if o.get("kind") == "TrainJob")
    tj["metadata"]["uid"] = "another-uid"
    with (b / "again.yaml").open("w") as f:
        y.dump(tj, f)
    got = run_cli(["diagnose", "--bundle", str(b), "--all", "-o", "json"])
    rows = {(r["namespace"], r["name"]): r for r in got.json()["trainjobs"]}
    key = (tj["metadata"]["namespace"], tj["metadata"]["name"])
    assert rows[key]["error"].startswith("the bundle holds 2 different TrainJobs named")


def test_every_diagnosis_follows_the_findings_schema(bundle: Path) -> None:
    import jsonschema

    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "findings.schema.json").read_text())
    doc = run_cli(["diagnose", "--bundle", str(bundle), "--all", "-o", "json"]).json()
    for d in doc["diagnoses"]:
        jsonschema.validate(d, schema)


def test_exit_codes_over_the_fleet() -> None:
    from ckpt_doctor.fleet.scan import FleetResult, JobOutcome, exit_code
    from ckpt_doctor.sources.live.fleet import NamespaceError

    def result(*exits: int, error: bool = False, ns_error: bool = False) -> FleetResult:
        r = FleetResult("live", "all namespaces", [JobOutcome("ml", f"j{i}", exit=e) for i, e in enumerate(exits)])
        if error:
            r.outcomes.append(JobOutcome("ml", "unread", error="forbidden"))
        if ns_error:
            r.namespace_errors.append(NamespaceError("cv", "server error 500"))
        return r

    assert exit_code(result(0, 0)) == 0
    assert exit_code(result(0, 1, 4)) == 1  # any job failing at or above --fail-on
    assert exit_code(result(0, 4)) == 0 and exit_code(result(0, 4), strict=True) == 4
    assert exit_code(result(0, error=True)) == 0 and exit_code(result(0, error=True), strict=True) == 4
    assert exit_code(result(0, ns_error=True), strict=True) == 4
    assert exit_code(result(1, error=True), strict=True) == 1


def test_without_the_pods_a_row_says_unknown_not_idle_and_no_steps_lost(tmp_path: Path) -> None:
    """Unknown is not absent: with the pod list (and so every attempt) not collected, a row said `idle` and 0
    steps lost, complete; the watcher exported the same as metrics."""
    import shutil

    d = tmp_path / "b"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "healthy-resume", d)
    for name in ("pods.yaml", "bundle.yaml", "jobset.yaml", "events.json", "jobs.yaml"):
        (d / name).unlink()
    shutil.rmtree(d / "logs")
    got = run_cli(["diagnose", "--bundle", str(d), "--all", "-o", "json"])
    (row,) = got.json()["trainjobs"]
    assert row["state"] == "unknown" and row["stepsLost"]["steps"] is None, row

"""`ckpt-doctor mcp` as an MCP client sees it: started as a subprocess, spoken to over stdio by the SDK's own client.

One session calls every tool against the live cluster (tests/assistants/cluster.py) and against bundles, with
planted secrets in the cluster, the bundle, the kubeconfig, an apply error and manifests; the tests then read
the transcript: the tools are all annotated read-only, the findings documents are valid against
docs/findings.schema.json, errors are one clear line (never a traceback), and no planted secret, in any
encoding, is in anything the server sent or wrote on stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from tests.assistants.cluster import LiveCluster
from tests.security.corpus import explain_text, leaks, lint_manifest
from tests.security.surfaces import manifests

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "findings.schema.json").read_text())
TOOLS = {
    "list_trainjobs",
    "diagnose_trainjob",
    "explain_apply_error",
    "lint_manifests",
    "incident_report",
    "list_rules",
    "show_rule",
}
PROMPTS = {"why_fresh_start", "is_runtime_resumable", "write_postmortem"}


@dataclass
class Call:
    tool: str
    args: dict[str, Any]
    is_error: bool
    text: str  # every text content, joined
    structured: Any

    def doc(self) -> Any:
        assert not self.is_error, self.text
        return self.structured


@dataclass
class Transcript:
    started: float  # seconds from spawning the server to its answer to initialize
    instructions: str
    tools: list[Any]
    calls: dict[str, Call]
    prompts: dict[str, str] = field(default_factory=dict)
    stderr: str = ""

    def sent(self) -> str:
        """Everything the server said: tool and prompt texts, structured results, instructions, stderr."""
        parts = [self.instructions, self.stderr, *self.prompts.values()]
        for c in self.calls.values():
            parts += [c.text, json.dumps(c.structured, default=str)]
        return "\n".join(parts)


def server_command(cluster: LiveCluster, *extra: str) -> tuple[str, list[str], dict[str, str]]:
    env = {"PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1", "CKPT_DOCTOR_DEBUG": "1"}
    return sys.executable, ["-m", "ckpt_doctor", "mcp", "--kubeconfig", str(cluster.kubeconfig), *extra], env


async def _talk(
    cluster: LiveCluster, plan: dict[str, tuple[str, dict[str, Any]]], errlog: Path, *extra: str
) -> Transcript:
    from mcp.client import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command, args, env = server_command(cluster, *extra)
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(ROOT))
    t0 = time.monotonic()
    with errlog.open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            started = time.monotonic() - t0
            tools = (await session.list_tools()).tools
            calls: dict[str, Call] = {}
            for key, (tool, tool_args) in plan.items():
                with anyio.fail_after(240):
                    res = await session.call_tool(tool, tool_args)
                text = "\n".join(getattr(c, "text", "") for c in res.content)
                calls[key] = Call(tool, tool_args, bool(res.is_error), text, res.structured_content)
            prompts: dict[str, str] = {}
            for p in (await session.list_prompts()).prompts:
                arg = {"runtime": "runtime.yaml"} if p.name == "is_runtime_resumable" else {"trainjob": "team-a/x"}
                got = await session.get_prompt(p.name, arg)
                prompts[p.name] = "\n".join(getattr(m.content, "text", "") for m in got.messages)
    return Transcript(started, init.instructions or "", tools, calls, prompts, errlog.read_text())


def _plan(cluster: LiveCluster, work: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    assert cluster.corpus is not None
    example = str(ROOT / "examples" / "missing-ancestor-label")
    plan: dict[str, tuple[str, dict[str, Any]]] = {
        "list all": ("list_trainjobs", {"all_namespaces": True}),
        "list one namespace": ("list_trainjobs", {"namespace": cluster.jobs["healthy-resume"].namespace}),
        "list the kubeconfig's namespace": ("list_trainjobs", {}),
        "list a bundle": ("list_trainjobs", {"bundle": str(cluster.bundle)}),
        "diagnose bundle secrets": ("diagnose_trainjob", {"bundle": str(cluster.bundle)}),
        "diagnose bundle example": ("diagnose_trainjob", {"bundle": example}),
        "report live secrets": ("incident_report", {"trainjob": cluster.jobs["secrets"].target}),
        "report bundle secrets": ("incident_report", {"bundle": str(cluster.bundle)}),
        "explain": ("explain_apply_error", {"error_text": explain_text(cluster.corpus)}),
        "lint paths": ("lint_manifests", {"paths": [str(manifests(cluster.corpus, work / "manifests"))]}),
        "lint inline": ("lint_manifests", {"manifest_yaml": lint_manifest(cluster.corpus)}),
        "rules": ("list_rules", {}),
        "rule": ("show_rule", {"rule_id": "fresh-start-after-restart"}),
        "error: no such TrainJob": ("diagnose_trainjob", {"trainjob": "sandbox/nope"}),
        "error: no such bundle": ("diagnose_trainjob", {"bundle": str(work / "missing.tar.gz")}),
        "error: no TrainJob named": ("incident_report", {}),
        "error: no such rule": ("show_rule", {"rule_id": "no-such-rule"}),
        "error: nothing to lint": ("lint_manifests", {}),
        "error: both scopes": ("list_trainjobs", {"namespace": "a", "all_namespaces": True}),
        "error: a bad argument": ("show_rule", {}),
    }
    for job in cluster.jobs.values():
        plan[f"diagnose live {job.scenario}"] = ("diagnose_trainjob", {"trainjob": job.target})
    bare = cluster.jobs["checkpoint-on-emptydir"]
    plan["diagnose live bare name"] = ("diagnose_trainjob", {"trainjob": bare.name, "namespace": bare.namespace})
    return plan


@pytest.fixture(scope="module")
def transcript(cluster: LiveCluster, tmp_path_factory: pytest.TempPathFactory) -> Transcript:
    work = tmp_path_factory.mktemp("mcp")
    return anyio.run(_talk, cluster, _plan(cluster, work), work / "stderr.log")


def test_it_serves_every_tool_read_only_and_says_what_not_evaluated_means(transcript: Transcript) -> None:
    assert {t.name for t in transcript.tools} == TOOLS
    for t in transcript.tools:
        a = t.annotations
        assert a is not None and a.read_only_hint is True and a.destructive_hint is False, t.name
        assert a.idempotent_hint is True, t.name
        assert t.description and len(t.description) > 40, t.name
    assert "not_evaluated" in transcript.instructions and "NOT a pass" in transcript.instructions
    assert "drill" in transcript.instructions
    print(f"\nmcp: initialize answered {transcript.started:.2f} s after spawning the server")


def test_every_call_that_should_work_works(transcript: Transcript) -> None:
    failed = {k: c.text for k, c in transcript.calls.items() if c.is_error and not k.startswith("error:")}
    assert not failed


def test_diagnoses_are_findings_documents_valid_against_the_schema(
    transcript: Transcript, cluster: LiveCluster
) -> None:
    for key, call in transcript.calls.items():
        if call.tool != "diagnose_trainjob" or key.startswith("error:"):
            continue
        doc = call.doc()
        jsonschema.validate(doc["findings"], SCHEMA)
        assert doc["findings"]["mode"] == "diagnose"
        assert doc["verdict"].strip(), key
    for job in cluster.jobs.values():
        doc = transcript.calls[f"diagnose live {job.scenario}"].doc()
        assert doc["findings"]["target"] == {"kind": "TrainJob", "namespace": job.namespace, "name": job.name}
        failed = {f["rule"] for f in doc["findings"]["findings"] if f["status"] == "fail"}
        if not job.expect:
            assert not failed, job.scenario
            assert "Nothing failed" in doc["verdict"]
        elif job.scenario != "secrets":
            assert set(job.expect) <= failed, job.scenario
            assert all(r in doc["verdict"] for r in job.expect if r in doc["verdict"]), job.scenario
            assert "Cause:" in doc["verdict"] or "Latent cause" in doc["verdict"], doc["verdict"]
    bare = transcript.calls["diagnose live bare name"].doc()
    assert bare["findings"]["target"]["name"] == cluster.jobs["checkpoint-on-emptydir"].name
    example = transcript.calls["diagnose bundle example"].doc()
    assert "missing-ancestor-label" in {f["rule"] for f in example["findings"]["findings"] if f["status"] == "fail"}


def test_the_list_ranks_every_trainjob_with_its_worst_finding(transcript: Transcript, cluster: LiveCluster) -> None:
    rows = transcript.calls["list all"].doc()["trainjobs"]
    by_job = {(r["namespace"], r["name"]): r for r in rows}
    assert set(by_job) == {(j.namespace, j.name) for j in cluster.jobs.values()}
    for job in cluster.healthy():
        assert by_job[(job.namespace, job.name)]["worst"] is None
    for job in cluster.broken():
        row = by_job[(job.namespace, job.name)]
        assert row["worst"] is not None, row
        doc = transcript.calls[f"diagnose live {job.scenario}"].doc()["findings"]
        failing = {f["rule"] for f in doc["findings"] if f["status"] == "fail"}
        assert row["worst"]["rule"] in failing and set(job.expect) <= failing, (row, failing)
        assert row["state"]
    assert rows[-1]["worst"] is None  # ranked: the healthy one last
    one = transcript.calls["list one namespace"].doc()["trainjobs"]
    ns = cluster.jobs["healthy-resume"].namespace
    assert sorted((r["namespace"], r["name"]) for r in one) == sorted(
        (j.namespace, j.name) for j in cluster.jobs.values() if j.namespace == ns
    )
    own = transcript.calls["list the kubeconfig's namespace"].doc()["trainjobs"]
    assert [r["name"] for r in own] == [cluster.jobs["secrets"].name]
    assert transcript.calls["list a bundle"].doc()["source"] == "bundle"


def test_report_explain_lint_and_rules(transcript: Transcript) -> None:
    for key in ("report live secrets", "report bundle secrets"):
        md = transcript.calls[key].text
        assert md.startswith("# Post-incident report"), md[:200]
        assert "## Summary" in md
    explained = transcript.calls["explain"].doc()
    jsonschema.validate({k: v for k, v in explained.items()}, SCHEMA)
    assert explained["recognised"] is True and explained["mode"] == "explain-error"
    assert "trainjob-rejected" in {f["rule"] for f in explained["findings"] if f["status"] == "fail"}
    for key in ("lint paths", "lint inline"):
        doc = transcript.calls[key].doc()
        skipped = doc.pop("skipped")
        assert isinstance(skipped, list)
        jsonschema.validate(doc, SCHEMA)
        assert doc["mode"] == "lint" and doc["target"] is None
        assert "env-in-pod-template-overrides" in {f["rule"] for f in doc["findings"] if f["status"] == "fail"}, key
    rule = transcript.calls["rule"].doc()
    assert rule["id"] == "fresh-start-after-restart" and rule["kind"] == "symptom"
    assert "ckpt-dir-not-persistent" in rule["explainedBy"]
    listed = transcript.calls["rules"].doc()["rules"]
    assert {"fresh-start-after-restart", "missing-ancestor-label"} <= {r["id"] for r in listed}


def test_errors_are_one_clear_line_never_a_traceback(transcript: Transcript) -> None:
    errors = {k: c for k, c in transcript.calls.items() if k.startswith("error:")}
    for key, call in errors.items():
        assert call.is_error, key
        assert "Traceback" not in call.text, (key, call.text)
        if key != "error: a bad argument":  # that one is the SDK's own argument check (pydantic's lines)
            assert "\n" not in call.text.strip(), (key, call.text)
    said = {k: c.text for k, c in errors.items()}
    assert "nope" in said["error: no such TrainJob"] and "not found" in said["error: no such TrainJob"]
    assert "missing.tar.gz" in said["error: no such bundle"]
    assert "trainjob" in said["error: no TrainJob named"]
    assert "fresh-start-after-restart" in said["error: no such rule"]
    assert "manifest_yaml" in said["error: nothing to lint"]
    assert "not both" in said["error: both scopes"]
    assert "rule_id" in said["error: a bad argument"]
    assert "Traceback" not in transcript.stderr


def test_prompts_ask_the_common_questions_over_the_tools(transcript: Transcript) -> None:
    assert set(transcript.prompts) == PROMPTS
    assert "diagnose_trainjob" in transcript.prompts["why_fresh_start"]
    assert "not_evaluated" in transcript.prompts["why_fresh_start"]
    assert "lint_manifests(paths=['runtime.yaml'])" in transcript.prompts["is_runtime_resumable"]
    assert "incident_report" in transcript.prompts["write_postmortem"]


def test_no_planted_secret_leaves_the_server(transcript: Transcript, cluster: LiveCluster) -> None:
    assert len(cluster.plants) >= 100
    leaked = leaks(transcript.sent(), cluster.plants)
    assert not leaked, sorted({f"{p.where}/{p.kind}" for p in leaked})


def test_an_unreachable_cluster_is_a_tool_error_that_quotes_no_credential(cluster: LiveCluster, tmp_path: Path) -> None:
    """The kubeconfig's `broken` context has a password in its server URL."""
    plan = {"diagnose": ("diagnose_trainjob", {"trainjob": "team-a/x"}), "list": ("list_trainjobs", {})}
    t = anyio.run(_talk, cluster, plan, tmp_path / "stderr.log", "--context", "broken", "--request-timeout", "3")
    for call in t.calls.values():
        assert call.is_error and "Traceback" not in call.text, call.text
        assert "127.0.0.1:9" in call.text or "reach" in call.text or "connect" in call.text, call.text
    assert not leaks(t.sent(), cluster.plants)


@pytest.mark.skipif(not os.environ.get("CKPT_DOCTOR_MCP_SHOW"), reason="prints the transcript (by hand)")
def test_show(transcript: Transcript) -> None:  # pragma: no cover
    for k, c in transcript.calls.items():
        print(f"--- {k}: error={c.is_error}\n{c.text[:600]}")

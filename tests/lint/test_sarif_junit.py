"""SARIF 2.1.0 (validated against the OASIS schema) and JUnit XML, for CI and code-scanning UIs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from ckpt_doctor.engine.catalogue import default_rules
from tests.lint.conftest import FIXTURES, REPO, SARIF_SCHEMA, variant


def _sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads(SARIF_SCHEMA.read_text())
    assert schema["id"].endswith("sarif-schema-2.1.0.json")
    return jsonschema.Draft4Validator(schema)


@pytest.mark.parametrize(
    "name",
    ["v2.1/sigterm-heredoc", "v2.1/rwo-multi-node", "v2.3/builtin-torch-distributed", "frameworks/megatron-finetune"],
)
def test_sarif_validates_and_locates(name: str, tmp_path: Path, cli) -> None:
    v = variant(name)
    root = v.materialize(tmp_path)
    rc, out, _err = cli("lint", str(root), "-o", "sarif", *v.flags)
    assert rc == 1
    log = json.loads(out)
    errors = sorted(_sarif_validator().iter_errors(log), key=str)
    assert not errors, errors[0]
    run = log["runs"][0]
    assert log["version"] == "2.1.0"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [r.id for r in default_rules()]
    results = run["results"]
    want = {(e.rule, e.file, e.line) for e in v.expected(root)}
    got = set()
    for res in results:
        loc = res["locations"][0]["physicalLocation"]
        got.add((res["ruleId"], Path(loc["artifactLocation"]["uri"]).name, loc["region"]["startLine"]))
        assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] in ("error", "warning", "note")
        assert "Fix:" in res["message"]["text"]
    assert got == want
    # what could not be evaluated travels along: no silent all-clear
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert any("needs cluster evidence" in n["message"]["text"] for n in notes)


def test_sarif_for_a_clean_set_and_relative_paths(cli, monkeypatch) -> None:
    monkeypatch.chdir(FIXTURES / "v2.1")
    rc, out, _err = cli("lint", "good", "-o", "sarif")
    log = json.loads(out)
    assert rc == 0 and not list(_sarif_validator().iter_errors(log))
    assert log["runs"][0]["results"] == []


def test_sarif_relative_uri(tmp_path: Path, cli, monkeypatch) -> None:
    v = variant("v2.1/no-failure-policy")
    v.materialize(tmp_path)
    monkeypatch.chdir(tmp_path)
    _rc, out, _err = cli("lint", "manifests", "-o", "sarif")
    (res,) = json.loads(out)["runs"][0]["results"]
    art = res["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art == {"uri": "manifests/runtime.yaml", "uriBaseId": "%SRCROOT%"}


def test_junit_one_testcase_per_finding(tmp_path: Path, cli) -> None:
    v = variant("v2.1/ancestor-label-on-pod-template")
    root = v.materialize(tmp_path)
    rc, out, _err = cli("lint", str(root), "-o", "junit")
    assert rc == 1
    xml = ET.fromstring(out)
    suite = xml.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    _rc, jout, _ = cli("lint", str(root), "-o", "json")
    doc = json.loads(jout)
    assert len(cases) == len(doc["findings"]) == int(suite.get("tests"))
    failures = [c for c in cases if c.find("failure") is not None]
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert len(failures) == doc["summary"]["fail"] == int(suite.get("failures")) == 1
    assert len(skipped) == doc["summary"]["notEvaluated"] == int(suite.get("skipped"))
    (f,) = failures
    assert f.get("name").startswith("missing-ancestor-label")
    assert f.get("file") == f"{root}/runtime.yaml" and f.get("line") == "21"
    assert f.find("failure").get("type") == "error"
    assert "Fix:" in f.find("failure").text
    assert all(c.find("skipped").get("message") for c in skipped)


def test_sarif_and_junit_for_diagnose_and_explain(cli) -> None:
    from ckpt_doctor.explain import explain
    from ckpt_doctor.report.junit import render as junit
    from ckpt_doctor.report.sarif import build

    ex = explain(
        'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: spec.runtimePatches: '
        "Invalid value: ...: must not have envs for the dataset-initializer, model-initializer, node containers"
    )
    log = build(ex.diagnosis)
    assert not list(_sarif_validator().iter_errors(log))
    assert {r["ruleId"] for r in log["runs"][0]["results"]} == {"trainjob-rejected", "env-in-pod-template-overrides"}
    assert ET.fromstring(junit(ex.diagnosis)).find("testsuite").get("failures") == "2"


def test_diagnose_sarif_and_junit_validate(cli) -> None:
    bundle = REPO / "examples" / "llamafactory-overwrite-output-dir"
    if not bundle.is_dir():
        pytest.skip("example bundle not present")
    rc, out, _err = cli("diagnose", "--bundle", str(bundle), "-o", "sarif")
    log = json.loads(out)
    assert rc == 1 and not list(_sarif_validator().iter_errors(log))
    run = log["runs"][0]
    assert run["originalUriBaseIds"]["BUNDLEROOT"]["uri"].endswith("/llamafactory-overwrite-output-dir/")
    assert {r["ruleId"] for r in run["results"]} >= {"llamafactory-overwrite-output-dir"}
    rc, out, _err = cli("diagnose", "--bundle", str(bundle), "-o", "junit")
    suite = ET.fromstring(out).find("testsuite")
    assert rc == 1 and suite is not None and int(suite.get("failures")) == len(run["results"])


def test_markdown_as_the_contract_lists_it_for_every_verb_that_prints_findings(tmp_path: Path, cli) -> None:
    v = variant("v2.1/rwo-multi-node")
    root = v.materialize(tmp_path)
    rc, out, _err = cli("lint", str(root), "-o", "markdown", *v.flags)
    assert rc == 1 and out.startswith("# ckpt-doctor: manifests")
    for e in v.expected(root):
        assert f"`{e.rule}`" in out

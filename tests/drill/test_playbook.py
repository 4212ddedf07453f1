"""The playbook as data: the packaged one loads and names real rules; broken ones are refused with the reason;
--steps / --skip choose steps but never drop submit or cleanup. And the marks: what the drill writes on what it
changes, and how each is undone."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from ckpt_doctor.drill import marks
from ckpt_doctor.drill.playbook import ACTIONS, choose_steps, default_path, load_playbook, parse_playbook
from ckpt_doctor.errors import InputError, UsageError


def raw() -> dict[str, Any]:
    return YAML(typ="safe").load(default_path().read_text())


def test_the_packaged_playbook() -> None:
    pb = load_playbook()
    assert pb.ids == ("preflight", "submit", "first-checkpoint", "crash", "suspend-resume", "cross-node", "cleanup")
    assert {s.action for s in pb.steps} == set(ACTIONS)
    for s in pb.steps:
        assert s.why and s.expect and s.timeout > 0
        assert s.changes == ACTIONS[s.action]
    assert "sigterm-not-forwarded" in pb.step("preflight").on_fail
    assert pb.scaled(0.01).step("crash").timeout == pytest.approx(9.0)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["steps"][3].update(action="nap"), "unknown action"),
        (lambda d: d["steps"].pop(), "needs a cleanup step"),
        (lambda d: d["steps"][2].update(onFail=["no-such-rule"]), "no-such-rule"),
        (lambda d: d["steps"][2].update(id="crash"), "used twice"),
        (lambda d: d["steps"][1].update(timeoutSeconds=0), "timeoutSeconds"),
        (lambda d: d["steps"][0].update(changes=True), "only reads"),
        (lambda d: d["steps"].insert(0, d["steps"].pop()), "cleanup step must come last"),
        (lambda d: d.update(kind="Drill"), "kind must be Playbook"),
        (lambda d: d["steps"][4].pop("why"), "why is missing"),
    ],
)
def test_broken_playbooks_are_refused(edit: Any, message: str) -> None:
    doc = copy.deepcopy(raw())
    edit(doc)
    with pytest.raises(InputError, match=message):
        parse_playbook(doc, "pb.yaml")


def test_unreadable_playbook(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        load_playbook(tmp_path / "none.yaml")


def test_choosing_steps() -> None:
    pb = load_playbook()
    chosen, notes = choose_steps(pb, ["crash"])
    assert chosen == {"submit", "crash", "cleanup"} and "also running" in notes[0]
    chosen, _ = choose_steps(pb, [], ["cross-node,suspend-resume"])
    assert chosen == set(pb.ids) - {"cross-node", "suspend-resume"}
    with pytest.raises(UsageError, match="always runs"):
        choose_steps(pb, [], ["cleanup"])
    with pytest.raises(UsageError, match="unknown step"):
        choose_steps(pb, ["crashh"])


@pytest.mark.parametrize(("version", "field"), [("v2.0", "podSpecOverrides"), ("v2.1", "podTemplateOverrides"),
                                                ("v2.2", "runtimePatches"), ("v2.3", "runtimePatches")])
def test_steering_entries_are_found_and_removed(version: str, field: str) -> None:
    assert marks.steer_field(version) == field
    theirs = {"targetJobs": [{"name": "node"}], "metadata": {"labels": {"team": "a"}}, "spec": {"tolerations": []}}
    if field == "runtimePatches":
        theirs = {"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {}}
    spec: dict[str, Any] = {field: [theirs]}
    ours = marks.steer_entry(field, "node", "gpu-node-b", "d-000001")
    patch = marks.steer_add_patch(spec, field, ours)
    assert patch == [{"op": "add", "path": f"/spec/{field}/-", "value": ours}]
    spec[field].append(ours)
    assert marks.has_steer(spec, "gpu-node-b")
    ops = marks.steer_remove_patch(spec, "gpu-node-b")
    assert [o["op"] for o in ops] == ["test", "remove"] and ops[1]["path"] == f"/spec/{field}/1"
    assert marks.without_steer(spec, "gpu-node-b") == {field: [theirs]}
    only = {field: [ours]}
    assert marks.steer_add_patch({}, field, ours)[0]["path"] == f"/spec/{field}"
    assert marks.steer_remove_patch(only, "gpu-node-b")[1] == {"op": "remove", "path": f"/spec/{field}"}


def test_marks_keep_the_original_and_say_what_to_undo() -> None:
    tj: dict[str, Any] = {"kind": "TrainJob", "metadata": {"name": "t", "namespace": "n", "annotations": {"a": "b"}}}
    first = marks.mark_patch(tj, {marks.ID: "d-1", marks.SUSPEND: "false"})
    assert first == {"metadata": {"annotations": {marks.ID: "d-1", marks.SUSPEND: "false"}}}
    tj["metadata"]["annotations"].update(first["metadata"]["annotations"])
    assert marks.mark_patch(tj, {marks.SUSPEND: "true"}) is None  # the value before the drill is never overwritten
    tj["metadata"]["annotations"][marks.STEER] = "gpu-node-b"
    u = marks.undo_for(tj)
    assert u is not None and u.suspend is False and u.unsteer == "gpu-node-b" and not u.delete
    assert marks.unmark_patch(tj) == {"metadata": {"annotations": {marks.ID: None, marks.SUSPEND: None,
                                                                   marks.STEER: None}}}
    created = {"kind": "PersistentVolumeClaim", "metadata": {"name": "p", "annotations": {marks.ID: "d-1",
                                                                                        marks.CREATED: "true"}}}
    assert marks.undo_for(created).delete  # type: ignore[union-attr]
    assert not marks.undo_for(created, keep=True).delete  # type: ignore[union-attr]
    assert marks.undo_for({"metadata": {"name": "x"}}) is None

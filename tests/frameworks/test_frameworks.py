"""The framework modules (`ckpt_doctor.frameworks`): each one's data is well formed, and each
generic reader finds each framework through its module, a framework registered at test time too."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from ckpt_doctor import frameworks
from ckpt_doctor.data import rules_dir
from ckpt_doctor.facts import logs
from ckpt_doctor.facts.program import TrainerSpec
from ckpt_doctor.facts.program.config import framework as config_framework
from ckpt_doctor.facts.program.config import read_config
from ckpt_doctor.facts.program.model import Entry, Program, PythonPart, Source, _identify, find_entry
from ckpt_doctor.facts.program.python import read_python
from ckpt_doctor.facts.program.shell import trainer_kind
from ckpt_doctor.frameworks.spec import (
    Bar,
    CheckpointName,
    Config,
    Framework,
    Launch,
    Layout,
    Logs,
    Marker,
    Pick,
    Pointer,
    Tool,
    template_regex,
)

ALL = frameworks.all_frameworks()
NAMES = [f.name for f in ALL]
SIGS = rules_dir() / "signatures"

# A name each framework's layout must recognise, with the step it carries (None: no step in it).
LAYOUT_EXAMPLES = {
    "hf-trainer": [("checkpoint-30", 30)],
    "llamafactory": [("checkpoint-500", 500)],
    "lightning": [("epoch=0-step=10.ckpt", 10), ("last.ckpt", None), ("last-v1.ckpt", None)],
    "accelerate": [("checkpoint_3", None), ("step_40", 40)],
    "deepspeed": [("global_step20", 20)],
    "megatron": [("iter_0000500", 500)],
    "torchtune": [("epoch_2", None), ("step_100", 100)],
    "orbax": [("1200", 1200), ("ckpt_1200", 1200)],
    "training-hub": [("full_state/epoch_3", None), ("hf_format/samples_320", None)],
    "torch-dcp": [("step-40", None)],
    "hand-rolled": [("checkpoint-7", 7), ("step_0010.pt", 10)],
}
# A config each framework's `Config.identify` claims (and no framework before it in rank order).
CONFIG_EXAMPLES = {
    "llamafactory": "stage: sft\nfinetuning_type: lora\noutput_dir: /ckpt\n",
    "torchtune": "model:\n  _component_: torchtune.models.llama3_2.lora_llama3_2_1b\n",
    "deepspeed": '{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": 1}',
    "accelerate": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n",
    "lightning": "trainer:\n  max_steps: 10\nmodel:\n  lr: 0.1\n",
    "megatron": "save: /ckpt\nload: /ckpt\nsave-interval: 100\n",
    "hf-trainer": "output_dir: /ckpt\nsave_steps: 10\n",
}


def _program(py: str) -> Program:
    spec = TrainerSpec({}, {"name": "node"}, "Pod/ns/p", "spec", True)
    prog = Program(spec, [], (), None, None, None, None, None, {}, Entry("none"))
    src = Source("python", py, "ConfigMap/ns/c", "data[train.py]", "/app/train.py", entry=True)
    prog.pythons.append(PythonPart(src, read_python(py, "/app/train.py")))
    _identify(prog)
    return prog


# -- well-formed ---------------------------------------------------------------------------------
def test_names_are_unique_and_ordered() -> None:
    assert len(set(NAMES)) == len(NAMES)
    assert [f.order for f in ALL] == sorted(f.order for f in ALL)
    assert {"hf-trainer", "llamafactory", "training-hub", "lightning", "accelerate", "torch-dcp", "torchrun",
            "deepspeed", "megatron", "torchtune", "orbax", "hand-rolled", "generic"} <= set(NAMES)  # fmt: skip


def test_every_packaged_signature_file_belongs_to_exactly_one_framework() -> None:
    owners: dict[str, list[str]] = {}
    for f in ALL:
        for name in f.logs.files:
            owners.setdefault(name, []).append(f.name)
    assert {p.name for p in SIGS.glob("*.yaml")} == set(owners)
    assert all(len(v) == 1 for v in owners.values()), owners


@pytest.mark.parametrize("fw", ALL, ids=NAMES)
def test_framework_data_is_well_formed(fw: Framework) -> None:
    assert fw.name and fw.title and fw.name == fw.name.lower()
    for name in fw.logs.files:  # its signature files say its names and load
        doc = yaml.safe_load((SIGS / name).read_text(encoding="utf-8"))
        assert doc["framework"] in fw.logs.names, (name, doc["framework"])
    for t in fw.launch.tools:
        assert t.role in ("launcher", "trainer", "command") and t.name and "/" not in t.name
        assert not t.skip or t.role == "launcher"
    for b in fw.bars:
        assert b.rx.groups >= max(b.epoch_group or 0, b.step_group or 0)
        assert not b.generic or b.step is not None, "a generic description is claimed only by a step rule"
    for p in fw.logs.prefixes:  # a logger's literal tag, peeled like a logger format
        assert p.strip() and p.startswith("[") and p.endswith(" ")
    for rx in fw.logs.load_frames:  # what a traceback frame of its checkpoint loading looks like (`file:function`)
        assert re.compile(rx).pattern and ":" in rx
    if fw.layout is not None:
        assert fw.layout.atomic in ("no", "file", "rename", "marker", "pointer")
        assert fw.layout.names, "a layout names its checkpoints"
        for n in fw.layout.names:
            assert n.kind in ("dir", "file") and n.regex.pattern.startswith("^")
            if n.parent:
                other, _, template = n.parent.partition(":")
                parent = frameworks.get(other)
                assert parent is not None and parent.layout is not None
                assert template in {p.template for p in parent.layout.names}
        for m in fw.layout.markers:
            assert m.means in ("complete", "incomplete") and m.where in ("inside", "beside", "name", "save_dir")
            assert m.regex.pattern
        for p in fw.layout.pointers:
            assert p.holds in ("tag", "step") and "/" not in p.file
        for name, step in LAYOUT_EXAMPLES.get(fw.name, []):
            got = fw.layout.identify(name)
            assert got is not None, name
            assert (int(got[1]["step"]) if "step" in got[1] else None) == step, (name, got)
    if fw.pick is not None:
        assert fw.pick.how in ("highest-step", "pointer", "named", "config", "program") and fw.pick.description
    if fw.config is not None:
        assert fw.config.identify is None or callable(fw.config.identify)
    for failure in fw.failures:
        assert failure.text and failure.means
        if failure.signature:
            assert failure.signature in {s.id for s in logs.load_signatures() if s.framework in fw.logs.names}


def test_layout_facts_the_engine_will_read() -> None:
    ds = frameworks.get("deepspeed").layout  # type: ignore[union-attr]
    assert ds.pointers[0].file == "latest"
    inside = [n for n in ds.names if n.parent]
    assert inside and inside[0].parent == "hf-trainer:checkpoint-{step}" and inside[0].step("global_step30") == 30
    mg = frameworks.get("megatron").layout  # type: ignore[union-attr]
    assert mg.pointers[0].file == "latest_checkpointed_iteration.txt" and mg.identify("iter_12") is None
    dcp = frameworks.get("torch-dcp").layout  # type: ignore[union-attr]
    assert any(m.name == ".metadata" and m.written_last for m in dcp.markers)
    hf = frameworks.get("hf-trainer")
    assert hf is not None and hf.layout is not None and hf.pick is not None
    assert any(m.name == "trainer_state.json" and m.written_last for m in hf.layout.markers)
    assert hf.pick.how == "highest-step" and not hf.pick.checks_complete
    jit = next(m for m in hf.layout.markers if m.means == "incomplete")
    assert jit.regex.match("checkpoint-is-incomplete.txt.node-0-rank-3")
    orbax = frameworks.get("orbax").layout  # type: ignore[union-attr]
    assert any(m.regex.match("1200.orbax-checkpoint-tmp-1733") for m in orbax.markers if m.where == "name")
    assert frameworks.get("lightning").layout.names[0].kind == "file"  # type: ignore[union-attr]
    assert template_regex("iter_{step:07d}") == r"^iter_(?P<step>\d{7})$"


# -- the readers find each framework through its module --------------------------------------------
@pytest.mark.parametrize("fw", ALL, ids=NAMES)
def test_readers_find_the_framework_through_its_module(fw: Framework) -> None:
    for t in fw.launch.tools:  # the shell reader's trainer command
        argv = [f"/usr/bin/{t.name}", *sorted(t.subcommands or ())[:1], "train.py"]
        assert trainer_kind(argv) == t.name
        entry = find_entry(argv)
        if t.role == "trainer":
            assert entry.kind == "tool" and frameworks.trainer_tools()[t.name] == fw.name
        elif t.role == "launcher" and (not t.subcommands or t.skip):
            assert (entry.kind, entry.value) == ("file", "train.py"), argv
            for flag in t.flags:  # an option without a value is not followed by one
                assert find_entry([t.name, *t.skip, flag, "train.py"]).value == "train.py", flag
    for mod in fw.launch.python_launchers:
        assert trainer_kind(["python", "-m", mod, "train.py"]) == fw.name
        assert find_entry(["python", "-m", mod, "train.py"]).value == "train.py"
    for mod in fw.launch.modules:
        assert (mod, fw.name) in frameworks.entry_modules()
    for prefix in fw.launch.imports:  # the Python reader, then the program model
        assert fw.name in _program(f"import {prefix}\n").stacks
    if fw.config is not None and fw.config.identify is not None:
        assert config_framework(read_config(CONFIG_EXAMPLES[fw.name], "c.yaml")) == fw.name
    sigs = logs.load_signatures()
    for name in fw.logs.names:  # the log reader
        assert any(s.framework == name and Path(s.where).name in fw.logs.files for s in sigs)
        if fw.stack and fw.logs.shows_stack:
            assert frameworks.log_stacks()[name] == fw.name
    if fw.pick is not None and not fw.library and fw.pick.how != "program":
        assert (fw.name, fw.pick.description) in frameworks.picks()


def test_hf_trainer_is_found_by_its_python_hook_and_llamafactory_implies_it() -> None:
    prog = _program("from transformers import Trainer, TrainingArguments\nTrainer(args=TrainingArguments('o'))\n")
    assert "hf-trainer" in prog.stacks
    prog = _program("import llamafactory\n")
    assert list(prog.stacks) == ["llamafactory", "hf-trainer"]


# -- a new framework needs its module only ---------------------------------------------------------
FAKE = Framework(
    name="zz-fake",
    title="ZZ Fake",
    order=5,
    launch=Launch(
        tools=(
            Tool("zzrun", role="launcher", flags=frozenset({"--zz-fast"})),
            Tool("zz-cli", frozenset({"fit"}), role="trainer"),
        ),
        python_launchers=("zz.launch",),
        modules=("zz.train",),
        imports=("zzlib",),
        python_calls=(),
    ),
    logs=Logs(names=("zz-fake",), path_steps=("zzstep_",)),
    layout=Layout(
        names=(CheckpointName("zz-{step}.bin", "file"),),
        pointers=(Pointer("zz-latest"),),
        markers=(Marker("zz.done", written_last=True),),
    ),
    pick=Pick("pointer", True, "ZZ reads zz-latest", rank=1),
    config=Config(lambda data, keys: "zz_key" in keys, rank=1),
    bars=(Bar(r"ZZ round (\d+)$", epoch_group=1),),
)


@pytest.fixture
def fake() -> Any:
    frameworks.register(FAKE)
    yield FAKE
    frameworks.unregister(FAKE.name)


def test_a_registered_framework_is_read_by_every_reader(fake: Framework, tmp_path: Path) -> None:
    assert trainer_kind(["zzrun", "--nodes", "2", "t.py"]) == "zzrun"
    assert trainer_kind(["zz-cli", "fit", "c.yaml"]) == "zz-cli"
    assert trainer_kind(["python", "-m", "zz.launch", "t.py"]) == "zz-fake"
    assert (find_entry(["zzrun", "t.py"]).kind, find_entry(["zzrun", "t.py"]).value) == ("file", "t.py")
    assert find_entry(["zzrun", "--zz-fast", "t.py"]).value == "t.py"
    assert find_entry(["zz-cli", "fit", "c.yaml"]).kind == "tool"
    prog = _program("import zzlib\n")
    assert list(prog.stacks) == ["zz-fake"] and prog.stack_words() == "ZZ Fake"
    assert config_framework(read_config("zz_key: 1\noutput_dir: /x\n", "c.yaml")) == "zz-fake"
    assert logs._step_from_path("/mnt/ckpt/zzstep_70") == 70
    assert logs._classify_bar("ZZ round 3", False) == "train"
    assert frameworks.picks()[0] == ("zz-fake", "ZZ reads zz-latest")
    # its log lines come from a signature file, as a user adds one (`--signatures DIR`)
    (tmp_path / "zz.yaml").write_text(
        "framework: zz-fake\nsignatures:\n  - id: zz-resumed\n    event: resumed\n"
        "    keyword: 'zz resumed from'\n    pattern: 'zz resumed from (?P<path>\\S+)'\n"
    )
    sig = next(s for s in logs.load_signatures([tmp_path]) if s.id == "zz-resumed")
    assert frameworks.log_stacks()[sig.framework] == "zz-fake"
    assert frameworks.all_frameworks()[0] is FAKE


def test_a_new_module_in_the_package_is_found_without_edits_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "zz_module.py").write_text(
        textwrap.dedent(
            """
            from ckpt_doctor.frameworks.spec import Framework, Launch, Tool

            FRAMEWORK = Framework(name="zz-module", title="ZZ Module", order=6,
                                  launch=Launch(tools=(Tool("zzmod", role="launcher"),), imports=("zzmodlib",)))
            """
        )
    )
    frameworks.__path__.append(str(tmp_path))  # type: ignore[attr-defined]
    frameworks._memo.clear()
    try:
        assert "zz-module" in [f.name for f in frameworks.all_frameworks()]
        assert trainer_kind(["zzmod", "t.py"]) == "zzmod"
        assert "zz-module" in _program("import zzmodlib.x\n").stacks
    finally:
        frameworks.__path__.remove(str(tmp_path))  # type: ignore[attr-defined]
        sys.modules.pop("ckpt_doctor.frameworks.zz_module", None)
        frameworks._memo.clear()

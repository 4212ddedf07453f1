"""The config reader (`ckpt_doctor.facts.program.config`): corpus configs, each API point, and
random input.

Corpus files with `kind: config` are read with `read_config(text, filename)`; `kind: args` files
hold one command line, split with shlex and read with `args_as_config`. Checks:
`format`, `framework`, `keys` (dotted key -> value through `get`), `absent` (keys `get` must not
find), `lines` (dotted key -> 1-based line), `positional` (args).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ckpt_doctor.facts.program.config import ConfigDoc, args_as_config, framework, get, read_config

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "scripts"


def _corpus() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for expect in sorted(CORPUS.glob("*/expect.yaml")):
        doc = yaml.safe_load(expect.read_text())
        for fname, spec in (doc.get("files") or {}).items():
            if spec.get("kind") in ("config", "args"):
                out.append((expect.parent.name, fname, spec))
    return out


CASES = _corpus()


@pytest.mark.parametrize(("name", "fname", "spec"), CASES, ids=[f"{n}/{f}" for n, f, _ in CASES])
def test_corpus_config(name: str, fname: str, spec: dict[str, Any]) -> None:
    text = (CORPUS / name / fname).read_text()
    doc = args_as_config(shlex.split(text)) if spec["kind"] == "args" else read_config(text, fname)
    assert doc.error is None, doc.error
    if "format" in spec:
        assert doc.format == spec["format"]
    if "framework" in spec:
        assert framework(doc) == spec["framework"]
    for key, want in (spec.get("keys") or {}).items():
        present, value = get(doc, key)
        assert present, (key, doc.data)
        assert value == want and type(value) is type(want), (key, value, want)
    for key in spec.get("absent", []):
        assert get(doc, key) == (False, None), key
    for key, line in (spec.get("lines") or {}).items():
        assert doc.lines.get(key) == line, (key, doc.lines.get(key))
    if "positional" in spec:
        assert doc.positional == spec["positional"]


def test_the_corpus_covers_every_config_format() -> None:
    formats = {read_config((CORPUS / n / f).read_text(), f).format for n, f, s in CASES if s["kind"] == "config"}
    assert {"yaml", "json", "args"} <= formats


# ---------------------------------------------------------------------------------------------
# formats


def test_format_by_extension_then_content() -> None:
    assert read_config("a: 1", "x.yml").format == "yaml"
    assert read_config('{"a": 1}', "ds_config.json").data == {"a": 1}
    assert read_config("a = 1\n[t]\nb = 'x'\n", "pyproject.toml").data == {"a": 1, "t": {"b": "x"}}
    assert read_config('{"a": 1}').format == "json"
    assert read_config("[tool.x]\na = 1\n").format == "toml"
    assert read_config("[1, 2]").format == "json"
    assert read_config("stage: sft\n").format == "yaml"
    assert read_config("key = 'v'\nother = 2\n").format == "toml"
    assert read_config("--output_dir /o --do_train").format == "args"


def test_yaml_11_booleans_like_the_frameworks_read_them() -> None:
    doc = read_config("overwrite_output_dir: yes\nsave_only_model: off\nbf16: True\n", "a.yaml")
    assert doc.data == {"overwrite_output_dir": True, "save_only_model": False, "bf16": True}


def test_yaml_lines_nested_lists_and_merges() -> None:
    doc = read_config(
        "base: &b\n  lr: 1\nrun:\n  <<: *b\n  out: /o\nlist:\n  - a: 1\n  - b: 2\n",
        "c.yaml",
    )
    assert doc.lines["run.out"] == 5 and doc.lines["list.1.b"] == 8 and doc.lines["run.lr"] == 2
    assert get(doc, "run.lr") == (True, 1)
    assert doc.line_of("run.out.missing") == 5


def test_multi_document_yaml_takes_the_first_document() -> None:
    doc = read_config("---\n---\na: 1\n---\nb: 2\n", "x.yaml")
    assert doc.data == {"a": 1} and doc.documents == 3


def test_json_lines() -> None:
    text = json.dumps({"zero_optimization": {"stage": 3, "x": [{"y": 1}]}, "fp16": {"enabled": True}}, indent=2)
    doc = read_config(text, "ds.json")
    assert doc.lines["zero_optimization.stage"] == 3
    assert doc.lines["zero_optimization.x.0.y"] == 6
    assert doc.lines["fp16.enabled"] == 11


def test_json_with_comments_is_tried_as_yaml() -> None:
    doc = read_config('{\n  # stage\n  "stage": 2,\n}\n', "ds.json")
    assert doc.data == {"stage": 2} and doc.format == "json"


def test_toml_lines() -> None:
    doc = read_config('a = 1\n[tool.sft]\n"output.dir" = "/o"\n[[runs]]\nk = 1\n[[runs]]\nk = 2\n', "x.toml")
    assert doc.lines == {"a": 1, "tool.sft": 2, "tool.sft.output.dir": 3, "runs": 4, "runs.0": 4, "runs.0.k": 5,
                         "runs.1": 6, "runs.1.k": 7}  # fmt: skip
    assert get(doc, "tool.sft.output.dir") == (True, "/o")
    assert get(doc, "runs.1.k") == (True, 2)


def test_errors_say_where() -> None:
    assert read_config("a: [1,\n", "x.yaml").error.startswith("malformed YAML at line")  # type: ignore[union-attr]
    assert "line 1" in (read_config('{"a": ', "x.json").error or "")
    assert read_config("a = = 1", "x.toml").error
    for bad in ("a: [", '{"a":', "[[x]\n"):
        assert read_config(bad).data is None


def test_empty_and_scalar_documents() -> None:
    assert read_config("", "x.yaml") == ConfigDoc("yaml", None, None, documents=0)
    assert read_config("# only a comment\n", "x.yaml").data is None
    assert read_config("just text", "x.yaml").data == "just text"


def test_alias_bomb_is_not_expanded() -> None:
    rows = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    prev = "a"
    for name in "bcdefghij":
        rows.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
        prev = name
    doc = read_config("\n".join(rows) + "\n", "bomb.yaml")
    assert doc.error is None and len(doc.lines) < 200


# ---------------------------------------------------------------------------------------------
# command lines


def test_args_as_config() -> None:
    doc = args_as_config(
        [
            "--output_dir", "/mnt/ckpt", "--do_train", "--save_steps=500", "--lr", "-1e-4",
            "--resume_from_checkpoint", "False", "--overwrite_output_dir", "true", "--run_name", "001",
            "--no-load-optim", "-c", "cfg.yaml", "train.py", "save_total_limit=3", "checkpointer.output_dir=/x",
            "resume_from_checkpoint_x=null", "--", "--not-an-option",
        ]
    )  # fmt: skip
    assert doc.data == {
        "output_dir": "/mnt/ckpt",
        "do_train": True,
        "save_steps": 500,
        "lr": -1e-4,
        "resume_from_checkpoint": False,
        "overwrite_output_dir": True,
        "run_name": "001",
        "no-load-optim": True,
        "c": "cfg.yaml",
        "save_total_limit": 3,
        "checkpointer.output_dir": "/x",
        "resume_from_checkpoint_x": None,
    }
    assert doc.positional == ["train.py", "--not-an-option"]
    assert doc.index["save_steps"] == 3
    assert get(doc, "no_load_optim") == (True, True)  # the other spelling of - and _
    assert get(doc, "checkpointer.output_dir") == (True, "/x")


def test_a_flag_followed_by_a_flag_is_true_and_the_last_value_wins() -> None:
    doc = args_as_config(["--finetune", "--save", "a", "--save", "b", "--flag"])
    assert doc.data == {"finetune": True, "save": "b", "flag": True}


def test_args_file_with_continuations() -> None:
    doc = read_config("--load /a \\\n--save /b \\\n--finetune  # base weights\n", "argv.args")
    assert doc.format == "args" and doc.data == {"load": "/a", "save": "/b", "finetune": True}


# ---------------------------------------------------------------------------------------------
# get


def test_get() -> None:
    doc = read_config("a:\n  b: [10, {c: x}]\n  'd.e': 1\n1: one\nn: null\n", "x.yaml")
    assert get(doc, "a.b.0") == (True, 10)
    assert get(doc, "a.b[1].c") == (True, "x")
    assert get(doc, "a.b.-1.c") == (True, "x")
    assert get(doc, "a.d.e") == (True, 1)
    assert get(doc, "1") == (True, "one")
    assert get(doc, "n") == (True, None)
    assert get(doc, "A") == (False, None)  # case-sensitive
    assert get(doc, "a.b.5") == (False, None)
    assert get(doc, "a.b.0.x") == (False, None)
    assert get(doc, "") == (True, doc.data)
    assert get(ConfigDoc("yaml", None, "bad"), "a") == (False, None)


def test_framework() -> None:
    def fw(text: str, name: str = "x.yaml") -> str | None:
        return framework(read_config(text, name))

    assert fw("stage: sft\nfinetuning_type: lora\n") == "llamafactory"
    assert fw("checkpointer:\n  _component_: torchtune.training.FullModelHFCheckpointer\n") == "torchtune"
    assert fw('{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}}', "ds.json") == "deepspeed"
    assert fw("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\n") == "accelerate"
    assert fw("trainer:\n  max_epochs: 3\nmodel:\n  lr: 1\n") == "lightning"
    assert fw("output_dir: /o\nsave_steps: 10\n") == "hf-trainer"
    assert fw("a: 1\n") is None
    assert framework(args_as_config(["--save", "/s", "--load", "/l", "--finetune"])) == "megatron"


# ---------------------------------------------------------------------------------------------
# never raise


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300), st.sampled_from(["", "x.yaml", "x.json", "x.toml", "x.args", "x.txt"]))
def test_random_text_never_raises(text: str, name: str) -> None:
    doc = read_config(text, name)
    assert isinstance(doc, ConfigDoc)
    get(doc, "a.b.0")
    framework(doc)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=20), max_size=20))
def test_random_argv_never_raises(argv: list[str]) -> None:
    doc = args_as_config(argv)
    assert doc.format == "args" and isinstance(doc.data, dict)


def _corpus_texts() -> list[tuple[str, str]]:
    return [((CORPUS / n / f).read_text(), f) for n, f, _ in CASES]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_corpus_configs_never_raise(data: st.DataObject) -> None:
    text, name = data.draw(st.sampled_from(_corpus_texts()))
    for pos, cut, ins in data.draw(
        st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 20), st.text(max_size=8)), max_size=5)
    ):
        p = pos % (len(text) + 1)
        text = text[:p] + ins + text[p + cut :]
    doc = read_config(text, name)
    assert isinstance(doc, ConfigDoc)
    for key in list(doc.lines)[:20]:
        get(doc, key)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=10),
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
        max_leaves=30,
    )
)
@settings(max_examples=150, deadline=None)
def test_json_and_yaml_round_trip_lines_cover_every_key(value: Any) -> None:
    doc = read_config(json.dumps({"root": value}, indent=1), "x.json")
    assert doc.error is None and get(doc, "root") == (True, value)
    ydoc = read_config(yaml.safe_dump({"root": value}), "x.yaml")
    assert ydoc.error is None and get(ydoc, "root")[0]


def test_pathological_configs() -> None:
    for text, name in (
        ("[" * 10_000, "x.json"),
        ("a:\n" + "  " * 5000 + "b: 1\n", "x.yaml"),
        ("- " * 5000 + "x", "x.yaml"),
        ("a = " + "[" * 5000, "x.toml"),
        ("\x00\x01", "x.yaml"),
        ("&a [*a]", "x.yaml"),
    ):
        assert isinstance(read_config(text, name), ConfigDoc)
    doc = read_config("&a [*a]", "x.yaml")
    get(doc, "0.0.0.0.0")


def test_python_s_dash_c_is_the_program_not_a_config() -> None:
    """`python -c CODE` runs CODE; `-c` names a config only for the tools that take one (it read the inline
    program as a config file in the image, and then nothing of the job could be judged)."""
    from ckpt_doctor.facts.program.model import find_entry

    code = "import torch\nprint(1)\n"
    e = find_entry(["python", "-u", "-c", code, "--config", "run.yaml"])
    assert (e.kind, e.value) == ("inline", code) and e.configs == ["run.yaml"]
    assert find_entry(["python3.11", "-c", code]).configs == []
    assert find_entry(["torchrun", "--nproc_per_node", "2", "train.py", "-c", "a.yaml"]).configs == ["a.yaml"]

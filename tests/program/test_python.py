"""The Python reader (`ckpt_doctor.facts.program.python`): corpus programs, each API point, the
near-misses that must not produce a finding, random input, and big input.

Corpus: `tests/corpus/scripts/<name>/expect.yaml` lists, per file, what the readers must yield.
For a `kind: python` file:

- `parsed`, `confidence`, `error_contains`: as read.
- `imports`, `arg_parsers`: must all be present.
- `discovery`, `io`: the exact list (order-insensitive); each entry names only the fields it checks
  (`at` is a substring of the site's line text; `keys`/`missing` compare as sets).
- `content`: `{save: …, load: …}` as `PyFacts.content(op)`.
- `calls`: name -> the first calls under that name, in order; each maps a keyword to its expected
  value: a literal (known, equal), `"?"` (given, not known), `"-"` (absent), `{env: NAME}` (read from
  the environment), `{source: TEXT}`; `name:` checks the callee's name.
- `no_calls`: names that must have no calls. `env`: the exact set of variables read.
- `sigterm`: whether a SIGTERM handler is installed; `sigterm_exit`: how the program ends once it ran
  (zero | nonzero | continues | unknown). `prints`: templates that must be there.
- `print_matches`: log line -> the template that must match it.
- `options`: argparse dest -> default; `required_options`: dests without a usable default.

`kind: config` and `kind: args` files are checked by tests/program/test_config.py.
"""

from __future__ import annotations

import ast
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ckpt_doctor.facts.program.python import PyFacts, read_python, template_regex

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "scripts"


def _corpus() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for expect in sorted(CORPUS.glob("*/expect.yaml")):
        doc = yaml.safe_load(expect.read_text())
        for fname, spec in (doc.get("files") or {}).items():
            if spec.get("kind") == "python":
                out.append((expect.parent.name, fname, spec))
    return out


CASES = _corpus()


def _read(name: str, fname: str) -> PyFacts:
    path = CORPUS / name / fname
    return read_python(path.read_text(), str(path))


def _entry_matches(actual: Any, want: dict[str, Any]) -> bool:
    for k, v in want.items():
        if k == "at":
            if v not in actual.site.text:
                return False
            continue
        got = getattr(actual, k)
        if k in ("keys", "missing", "parts"):
            if set(got) != set(v):
                return False
        elif v == "*":
            continue
        elif got != v:
            return False
    return True


def _match_exactly(actual: list[Any], wanted: list[dict[str, Any]], what: str) -> None:
    left = list(actual)
    for w in wanted:
        hit = next((a for a in left if _entry_matches(a, w)), None)
        assert hit is not None, f"{what}: no match for {w} in {left}"
        left.remove(hit)
    assert not left, f"{what}: unexpected {left}"


def _value_matches(v: Any, want: Any) -> bool:
    if want == "?":
        return v is not None and not v.known
    if want == "-":
        return v is None
    if v is None:
        return False
    if isinstance(want, dict):
        if "env" in want:
            return v.origin == "env" and v.env == want["env"]
        if "source" in want:
            return v.source == want["source"]
    return v.known and v.const == want and type(v.const) is type(want)


@pytest.mark.parametrize(("name", "fname", "spec"), CASES, ids=[f"{n}/{f}" for n, f, _ in CASES])
def test_corpus_program(name: str, fname: str, spec: dict[str, Any]) -> None:
    facts = _read(name, fname)
    if "parsed" in spec:
        assert facts.parsed is spec["parsed"], facts.error
    if "confidence" in spec:
        assert facts.confidence == spec["confidence"]
    if "error_contains" in spec:
        assert facts.error and spec["error_contains"] in facts.error
    for imp in spec.get("imports", []):
        assert imp in facts.imports, (imp, sorted(facts.imports))
    for p in spec.get("arg_parsers", []):
        assert p in facts.arg_parsers, facts.arg_parsers
    if "discovery" in spec:
        _match_exactly(facts.discovery, spec["discovery"], "discovery")
    if "io" in spec:
        _match_exactly(facts.io, spec["io"], "io")
    for op, want in (spec.get("content") or {}).items():
        assert facts.content(op) == want, (op, facts.io)
    for cname, wanted in (spec.get("calls") or {}).items():
        got = facts.calls.get(cname) or []
        assert len(got) >= len(wanted), (cname, got)
        for call, want in zip(got, wanted, strict=False):
            for k, v in want.items():
                if k == "name":
                    assert call.name == v, (cname, call)
                else:
                    assert _value_matches(call.kwargs.get(k), v), (cname, k, v, call.kwargs.get(k))
    for cname in spec.get("no_calls", []):
        assert not facts.calls.get(cname), (cname, facts.calls.get(cname))
    if "env" in spec:
        assert set(facts.env_reads) == set(spec["env"])
    if "sigterm" in spec:
        assert (facts.sigterm_handler is not None) is spec["sigterm"]
    if "sigterm_exit" in spec:
        assert facts.sigterm_end is not None and facts.sigterm_end.exit == spec["sigterm_exit"], facts.sigterm_end
    texts = [p.text for p in facts.prints]
    for p in spec.get("prints", []):
        assert p in texts, (p, texts)
    for line, tpl in (spec.get("print_matches") or {}).items():
        assert tpl in [s.text for s in facts.matching_prints(line)], (line, facts.prints)
    for dest, default in (spec.get("options") or {}).items():
        opt = facts.options[dest]
        assert opt.default.known and opt.default.const == default, (dest, opt)
    for dest in spec.get("required_options", []):
        assert not facts.options[dest].default.known


def test_the_corpus_is_big_enough_and_documented() -> None:
    names = {p.parent.name for p in CORPUS.glob("*/expect.yaml")}
    assert len(names) >= 14
    for n in names:
        src = (CORPUS / n / "source.md").read_text()
        assert "no upstream code copied" in src, n
        assert len(src.splitlines()) >= 3


# ---------------------------------------------------------------------------------------------
# discovery: lexical, and the near-misses that must not be lexical


def kinds(src: str) -> list[str]:
    return [d.kind for d in read_python(src).discovery]


LEXICAL = {
    "nested glob/join": 'import glob, os\nlast = sorted(glob.glob(os.path.join(d, "checkpoint-*")))[-1]\n',
    "pathlib glob": 'from pathlib import Path\nlast = sorted(Path(d).glob("checkpoint-*"))[-1]\n',
    "max listdir": "import os\nlatest = max(os.listdir(ckpt_dir))\n",
    "min listdir is a pick too": "import os\noldest = min(os.listdir(ckpt_dir))\n",
    "sort in place": 'import glob\nckpts = glob.glob("/mnt/ckpt/checkpoint-*")\nckpts.sort()\nresume = ckpts[-1]\n',
    "list built first": (
        "import os\nckpts = []\nfor d in os.listdir(root):\n    if d.startswith('checkpoint-'):\n"
        "        ckpts.append(os.path.join(root, d))\nckpts = sorted(ckpts)\nresume = ckpts[-1]\n"
    ),
    "comprehension then sorted later": (
        "import os\nnames = [d for d in os.listdir(out) if d.startswith('checkpoint')]\n"
        "names = sorted(names)\nlast = names[-1]\n"
    ),
    "list() wrapper": (
        "from pathlib import Path\nCKPT = list(sorted(str(p) for p in Path(DIR).glob('checkpoint-*')))[-1]\n"
    ),
    "from glob import glob": 'from glob import glob\nlast = sorted(glob(f"{out}/ckpt_*.pt"))[-1]\n',
    "string key is still text": (
        'import glob\nlast = sorted(glob.glob("out/checkpoint-*"), key=lambda p: p.split("-")[-1])[-1]\n'
    ),
    "f-string pattern": (
        'import glob\nckpts = sorted(glob.glob(f"{ckpt_dir}/checkpoint-*"))\nresume = ckpts[-1] if ckpts else None\n'
    ),
    "iter_ names (Megatron)": 'import glob\nlast = sorted(glob.glob(save + "/iter_*"))[-1]\n',
    "helper function name": (
        "import glob, os\ndef find_latest_checkpoint(d):\n    return sorted(glob.glob(os.path.join(d, '*')))[-1]\n"
    ),
    "passed to torch.load": "import glob, torch\nsd = torch.load(sorted(glob.glob('weights/*.pt'))[-1])\n",
    "passed to resume": (
        "import os\nfrom transformers import Trainer\nlast = sorted(os.listdir(out))[-1]\n"
        "trainer.train(resume_from_checkpoint=os.path.join(out, last))\n"
    ),
}


@pytest.mark.parametrize("src", LEXICAL.values(), ids=LEXICAL.keys())
def test_lexical_picks_are_found(src: str) -> None:
    assert "lexical" in kinds(src), read_python(src).discovery


NOT_LEXICAL = {
    "int key": 'import glob\nlast = sorted(glob.glob("c/checkpoint-*"), key=lambda p: int(p.split("-")[-1]))[-1]\n',
    "regex key": (
        'import glob, re\nlast = sorted(glob.glob("c/checkpoint-*"), '
        'key=lambda p: int(re.search(r"(\\d+)$", p).group(1)))[-1]\n'
    ),
    "natsort": "import os\nfrom natsort import natsorted\nlast = natsorted(os.listdir(ckpt_dir))[-1]\n",
    "natsort keygen": ("import os, natsort\nlast = sorted(os.listdir(ckpt_dir), key=natsort.natsort_keygen())[-1]\n"),
    "local key function": (
        "import os\ndef step_of(name):\n    return int(name.rsplit('-', 1)[1])\n"
        "last = max(os.listdir(ckpt_dir), key=step_of)\n"
    ),
    "len then text": "import os\nlast = sorted(os.listdir(ckpt_dir), key=lambda x: (len(x), x))[-1]\n",
    "numbers parsed first": "import os\nstep = max(int(d.split('-')[1]) for d in os.listdir(ckpt_dir))\n",
    "mtime": "import glob, os\nlast = max(glob.glob('ckpt/*.pt'), key=os.path.getmtime)\n",
    "stat mtime": "from pathlib import Path\nlast = max(Path(ckpt).glob('*.ckpt'), key=lambda p: p.stat().st_mtime)\n",
}


@pytest.mark.parametrize("src", NOT_LEXICAL.values(), ids=NOT_LEXICAL.keys())
def test_numeric_and_time_keys_are_not_lexical(src: str) -> None:
    ks = kinds(src)
    assert ks and "lexical" not in ks, read_python(src).discovery


NOT_A_CHECKPOINT_PICK = {
    "data shards": 'import glob\nshards = sorted(glob.glob("/data/train-*.parquet"))\nfirst = shards[0]\n',
    "shards loaded with torch.load": (
        "import glob, torch\nshards = sorted(glob.glob('/data/shard_*.pt'))\nx = torch.load(shards[0])\n"
    ),
    "json results": 'import glob, os\nfor f in sorted(glob.glob(os.path.join(d, "*.json"))):\n    print(f)\n',
    "iterating, no pick": "import glob\nfor c in sorted(glob.glob('ckpt/checkpoint-*')):\n    print(c)\n",
    "printing the listing": (
        'import os\nprint(f"[checkpoint] done. ckpts={sorted(os.listdir(ckpt_dir))}", flush=True)\n'
    ),
    "logs": "import glob\nlatest_log = sorted(glob.glob('runs/*.log'))[-1]\n",
    "sorting numbers": "best = max(val_losses)\nsteps = sorted(step_times)\n",
    "sql migrations": (
        'import glob, os\nsql_files = sorted(glob.glob(os.path.join(d, "*.sql")))\nlast = sql_files[-1]\n'
    ),
}


@pytest.mark.parametrize("src", NOT_A_CHECKPOINT_PICK.values(), ids=NOT_A_CHECKPOINT_PICK.keys())
def test_sorting_other_files_is_not_a_checkpoint_discovery(src: str) -> None:
    assert kinds(src) == [], read_python(src).discovery


def test_unsorted_glob_index_is_unordered() -> None:
    src = (
        "import glob, torch\npkl_list = glob.glob(os.path.join(args.model_dir, '*.pkl'))\n"
        "ckpt = torch.load(pkl_list[-1])\n"
    )
    assert kinds(src) == ["unordered"]
    assert kinds("import glob\nfiles = glob.glob('data/*.csv')\nfirst = files[0]\n") == []


def test_discovery_pattern_root_and_site() -> None:
    src = (
        "import glob, os\n"
        "\n"
        "ckpts = sorted(glob.glob(os.path.join(args.output_dir, 'checkpoint-*')))\n"
        "resume = ckpts[-1]\n"
    )
    (d,) = read_python(src).discovery
    assert (d.kind, d.pattern, d.root, d.selector) == ("lexical", "checkpoint-*", "args.output_dir", "sorted")
    assert d.site.line == 3 and d.site.text.startswith("ckpts = sorted(")


def test_hf_get_last_checkpoint_and_resume_true() -> None:
    f = read_python(
        "from transformers import Trainer, TrainingArguments\n"
        "from transformers.trainer_utils import get_last_checkpoint\n"
        "args = TrainingArguments(output_dir='/mnt/ckpt/run')\nlast = get_last_checkpoint(args.output_dir)\n"
        "Trainer(args=args).train(resume_from_checkpoint=True)\n"
    )
    assert [(d.kind, d.selector, d.root) for d in f.discovery] == [
        ("hf-get-last", "get_last_checkpoint", "args.output_dir"),
        ("hf-get-last", "train", "'/mnt/ckpt/run'"),
    ]


def test_a_local_get_last_checkpoint_is_read_as_code() -> None:
    f = read_python(
        "import os\ndef get_last_checkpoint(d):\n    return max(os.listdir(d))\nlast = get_last_checkpoint(out)\n"
    )
    assert [d.kind for d in f.discovery] == ["lexical"]


def test_padded_names() -> None:
    src = (
        "import glob\n"
        "def latest(d):\n    return sorted(glob.glob(d + '/iter_*'))[-1]\n"
        "def save(d, it, sd):\n    torch.save(sd, f'{d}/iter_{it:07d}')\n"
    )
    (d,) = read_python(src).discovery
    assert d.kind == "lexical" and d.padded
    (d,) = read_python("import glob\nlast = sorted(glob.glob('out/iter_*'))[-1]\n").discovery
    assert not d.padded


# ---------------------------------------------------------------------------------------------
# state io: weights-only is decided by what is saved, never by a word elsewhere


def io(src: str) -> list[tuple[str, str, str]]:
    return [(r.op, r.api, r.content) for r in read_python(src).io]


def test_state_dict_alone_is_weights_even_if_optimizer_is_mentioned() -> None:
    src = (
        "import torch\noptimizer = torch.optim.AdamW(model.parameters())  # optimizer, scheduler, step\n"
        "torch.save(model.state_dict(), 'ckpt.pt')\n"
    )
    f = read_python(src)
    assert io(src) == [("save", "torch.save", "weights")]
    assert f.io[0].missing == ("optimizer", "scheduler", "step")
    assert f.content("save") == "weights"


def test_a_full_dict_is_full_and_keys_are_listed() -> None:
    src = (
        "import torch\n"
        "torch.save({'model': model.state_dict(), 'optimizer': opt.state_dict(),\n"
        "            'scheduler': sched.state_dict(), 'step': step}, path)\n"
    )
    (r,) = read_python(src).io
    assert (r.content, r.keys, r.missing) == ("full", ("model", "optimizer", "scheduler", "step"), ())


def test_a_dict_built_before_the_save() -> None:
    src = (
        "import torch\nstate = {'model': model.state_dict()}\nstate['optimizer'] = optimizer.state_dict()\n"
        "state.update(step=step)\ntorch.save(state, path)\n"
    )
    (r,) = read_python(src).io
    assert r.content == "full" and set(r.keys) == {"model", "optimizer", "step"}
    assert r.built is not None and r.built.line == 2


def test_weights_and_step_without_optimizer_is_weights() -> None:
    (r,) = read_python("import torch\ntorch.save({'model': m.state_dict(), 'epoch': e}, p)\n").io
    assert r.content == "weights" and r.missing == ("optimizer", "scheduler")


def test_optimizer_saved_separately_completes_the_checkpoint() -> None:
    f = read_python(
        "import torch\ntorch.save(model.state_dict(), 'model.pt')\ntorch.save(optimizer.state_dict(), 'optim.pt')\n"
    )
    assert [r.content for r in f.io] == ["weights", "state"]
    assert f.content("save") == "full"


def test_save_through_a_helper_parameter() -> None:
    src = (
        "import torch\ndef save_checkpoint(state, filename):\n    torch.save(state, filename)\n"
        "save_checkpoint({'state_dict': model.state_dict(), 'optimizer': optimizer.state_dict()}, 'c.pt')\n"
    )
    (r,) = read_python(src).io
    assert r.content == "full" and r.built is not None and r.built.line == 4


def test_hf_save_only_model_is_weights() -> None:
    src = (
        "from transformers import Trainer, TrainingArguments\n"
        "args = TrainingArguments(output_dir='o', save_only_model=True)\n"
        "trainer = Trainer(model=m, args=args)\ntrainer.train()\n"
    )
    assert io(src) == [("save", "hf-trainer", "weights")]
    src2 = src.replace("save_only_model=True", "save_steps=10")
    assert io(src2) == [("save", "hf-trainer", "full")]


def test_save_only_model_set_as_an_attribute_later() -> None:
    src = (
        "from transformers import Trainer, TrainingArguments\nargs = TrainingArguments(output_dir='o')\n"
        "args.save_only_model = True\nTrainer(model=m, args=args).train()\n"
    )
    f = read_python(src)
    assert f.kwarg("TrainingArguments", "save_only_model").const is True
    assert io(src) == [("save", "hf-trainer", "weights")]


def test_resume_with_from_pretrained_is_weights_and_base_loads_are_not_resumes() -> None:
    f = read_python(
        "from transformers import AutoModelForCausalLM, AutoTokenizer\n"
        "base = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)\n"
        "tok = AutoTokenizer.from_pretrained(last_checkpoint)\n"
        "model = AutoModelForCausalLM.from_pretrained(last_checkpoint)\n"
    )
    assert [(r.op, r.api, r.content, r.site.line) for r in f.io] == [("load", "from_pretrained", "weights", 4)]
    assert f.content("load") == "weights"


def test_save_strategy_no_means_no_trainer_checkpoints() -> None:
    src = (
        "from transformers import Trainer, TrainingArguments\n"
        "Trainer(args=TrainingArguments(output_dir='o', save_strategy='no')).train()\n"
    )
    assert io(src) == []


def test_resume_none_is_not_a_load() -> None:
    src = "from transformers import Trainer\ntrainer = Trainer(model=m)\ntrainer.train(resume_from_checkpoint=None)\n"
    assert [x for x in io(src) if x[0] == "load"] == []


def test_deepspeed_module_only_load_is_weights() -> None:
    src = (
        "import deepspeed\n"
        "engine.load_checkpoint(d, tag, load_optimizer_states=False, load_lr_scheduler_states=False)\n"
    )
    assert io(src) == [("load", "deepspeed.load_checkpoint", "weights")]


def test_lightning_weights_only_and_load_from_checkpoint() -> None:
    src = (
        "import lightning as L\nfrom lightning.pytorch.callbacks import ModelCheckpoint\n"
        "mc = ModelCheckpoint(dirpath='c', save_weights_only=True)\nmodel = Lit.load_from_checkpoint('c/last.ckpt')\n"
    )
    assert io(src) == [("save", "lightning", "weights"), ("load", "lightning", "weights")]


def test_training_hub_absent_flag_is_unknown() -> None:
    f = read_python("from training_hub import sft\nsft(model_path='m', data_path='d', ckpt_output_dir='/mnt/ckpt')\n")
    assert [(r.api, r.content) for r in f.io] == [("training_hub", "unknown")]
    f = read_python(
        "from training_hub import sft\nsft(ckpt_output_dir='/mnt/ckpt', accelerate_full_state_at_epoch=True)\n"
    )
    assert [(r.api, r.content) for r in f.io] == [("training_hub", "full")]


def test_tokenizer_save_pretrained_is_not_state() -> None:
    assert io("tokenizer.save_pretrained(out)\nprocessor.save_pretrained(out)\n") == []


# ---------------------------------------------------------------------------------------------
# calls and values


def test_values_through_bindings_argparse_and_env() -> None:
    f = read_python(
        "import argparse, os\nfrom transformers import TrainingArguments\n"
        "p = argparse.ArgumentParser()\np.add_argument('--save-total-limit', type=int, default=3)\n"
        "p.add_argument('--out', required=True)\np.add_argument('--resume', action='store_true')\n"
        "args = p.parse_args()\nRESUME = True\nckpt = os.environ.get('CKPT_DIR', '/mnt/ckpt')\n"
        "TrainingArguments(output_dir=ckpt, save_total_limit=args.save_total_limit, resume_from_checkpoint=RESUME,\n"
        "    logging_dir=args.out, overwrite_output_dir=args.resume, seed=-1, report_to=['none'], run_name=f'r-{1}')\n"
    )
    kw = f.first("TrainingArguments").kwargs  # type: ignore[union-attr]
    assert (kw["save_total_limit"].const, kw["save_total_limit"].origin, kw["save_total_limit"].option) == (
        3,
        "argparse-default",
        "--save-total-limit",
    )
    assert kw["resume_from_checkpoint"].known and kw["resume_from_checkpoint"].const is True
    assert kw["resume_from_checkpoint"].origin == "name"
    assert (kw["output_dir"].known, kw["output_dir"].env, kw["output_dir"].default) == (False, "CKPT_DIR", "/mnt/ckpt")
    assert not kw["logging_dir"].known
    assert kw["overwrite_output_dir"].const is False
    assert kw["seed"].const == -1 and kw["report_to"].const == ["none"] and kw["run_name"].const == "r-1"
    assert f.options["out"].required and not f.options["out"].default.known


def test_a_conditionally_rebound_name_is_unknown() -> None:
    f = read_python(
        "from transformers import Trainer\nresume = None\nif ckpts:\n    resume = ckpts[-1]\n"
        "trainer = Trainer()\ntrainer.train(resume_from_checkpoint=resume)\n"
    )
    assert not f.kwarg("train", "resume_from_checkpoint").known  # type: ignore[union-attr]


def test_kwargs_from_a_dict() -> None:
    f = read_python(
        "from transformers import TrainingArguments\ncfg = {'output_dir': '/o', 'save_steps': 5}\n"
        "TrainingArguments(**cfg)\nTrainingArguments(**dict(save_only_model=True))\nTrainingArguments(**load())\n"
    )
    a, b, c = f.calls["TrainingArguments"]
    assert a.kwargs["save_steps"].const == 5 and b.kwargs["save_only_model"].const is True
    assert "**" in c.kwargs and not c.kwargs["**"].known


def test_trainer_kinds() -> None:
    f = read_python(
        "import pytorch_lightning as pl\nfrom trl import GRPOConfig, GRPOTrainer\n"
        "GRPOTrainer(args=GRPOConfig(output_dir='o', save_steps=10))\n"
        "pl.Trainer(max_epochs=1).fit(m, ckpt_path='last')\n"
    )
    assert [c.name for c in f.calls["Trainer"]] == ["GRPOTrainer"]
    assert [c.name for c in f.calls["TrainingArguments"]] == ["GRPOConfig"]
    assert f.calls["lightning.Trainer"][0].kwargs["max_epochs"].const == 1
    assert f.calls["fit"][0].kwargs["ckpt_path"].const == "last"


def test_a_local_trainer_class_is_not_hf() -> None:
    f = read_python("class Trainer:\n    def train(self, n): ...\ntrainer = Trainer()\ntrainer.train(5)\n")
    assert "Trainer" not in f.calls and "train" not in f.calls
    g = read_python(
        "from transformers import Trainer\nclass MyTrainer(Trainer):\n    pass\nt = MyTrainer(args=a)\nt.train('c-5')\n"
    )
    assert g.calls["Trainer"][0].name == "MyTrainer"
    assert g.calls["train"][0].kwargs["resume_from_checkpoint"].const == "c-5"


def test_model_train_mode_is_not_a_training_call() -> None:
    f = read_python("from transformers import AutoModel\nmodel = AutoModel.from_pretrained('x')\nmodel.train()\n")
    assert "train" not in f.calls


def test_lora_and_quantization_configs_are_not_training_arguments() -> None:
    f = read_python(
        "from peft import LoraConfig\nfrom transformers import BitsAndBytesConfig, AutoConfig\n"
        "LoraConfig(r=8)\nBitsAndBytesConfig(load_in_4bit=True)\nAutoConfig.from_pretrained('x')\n"
    )
    assert "TrainingArguments" not in f.calls


def test_env_reads() -> None:
    f = read_python(
        "import os\nfrom os import environ\na = os.environ['A']\nb = os.environ.get('B', 'x')\nc = os.getenv('C')\n"
        "d = environ.get('D')\nif 'E' in os.environ:\n    pass\nos.environ.setdefault('F', '1')\n"
    )
    assert list(f.env_reads) == ["A", "B", "C", "D", "E", "F"]
    assert f.env_reads["B"].line == 4


def test_sigterm_handler() -> None:
    assert read_python("import signal\nsignal.signal(signal.SIGTERM, h)\n").sigterm_handler is not None
    assert read_python("from signal import signal, SIGTERM\nsignal(SIGTERM, h)\n").sigterm_handler is not None
    loop = "import signal\nfor s in (signal.SIGINT, signal.SIGTERM):\n    signal.signal(s, h)\n"
    assert read_python(loop).sigterm_handler is not None
    assert read_python("import signal\nsignal.signal(signal.SIGTERM, signal.SIG_DFL)\n").sigterm_handler is None
    assert read_python("import signal\nsignal.signal(signal.SIGINT, h)\n").sigterm_handler is None
    assert read_python("print('SIGTERM handled elsewhere')\n").sigterm_handler is None


def test_prints_and_matching() -> None:
    f = read_python(
        "import logging\nlogger = logging.getLogger()\nprint('a', x)\nlogger.info('saved %s at %d', path, step)\n"
        "logger.warning(f'resuming from {ckpt}')\nprint(x)\nself.log('train_loss', loss)\n"
        "print('[ckpt] ' + str(step), flush=True)\n"
    )
    assert [p.text for p in f.prints] == [
        "a {x}",
        "saved {path} at {step}",
        "resuming from {ckpt}",
        "[ckpt] {str(step)}",
    ]
    assert [s.text for s in f.matching_prints("2024 INFO resuming from /mnt/ckpt/checkpoint-5")] == [
        "resuming from {ckpt}"
    ]
    assert template_regex("x %s y {z}") == "x\\ .*?\\ y\\ .*?"


def test_imports() -> None:
    f = read_python(
        "import torch.distributed.checkpoint as dcp\nfrom lightning.pytorch import Trainer as T\nimport deepspeed\n"
        "from . import local\n"
    )
    assert {"torch", "torch.distributed", "torch.distributed.checkpoint", "lightning", "lightning.pytorch",
            "lightning.pytorch.Trainer", "deepspeed"} <= f.imports  # fmt: skip
    assert f.uses("lightning") and not f.uses("transformers")


def test_dcp_through_an_alias() -> None:
    f = read_python(
        "from torch.distributed import checkpoint as dcp\ndcp.save({'model': model.state_dict()}, checkpoint_id=d)\n"
    )
    assert [(r.api, r.content) for r in f.io] == [("dcp.save", "weights")]


# ---------------------------------------------------------------------------------------------
# unparseable input falls back to text


def test_syntax_error_falls_back_to_low_confidence_text() -> None:
    src = (
        "import glob, torch\n"
        "print 'python 2'\n"
        "last = sorted(glob.glob('out/checkpoint-*'))[-1]\n"
        "torch.save(model.state_dict(), 'x.pt')\n"
        "args = TrainingArguments(output_dir='o', save_only_model=True)\n"
    )
    f = read_python(src)
    assert not f.parsed and f.confidence == "low" and f.error and "SyntaxError" in f.error
    assert [(d.kind, d.pattern) for d in f.discovery] == [("lexical", "checkpoint-*")]
    assert [(r.api, r.content) for r in f.io] == [("torch.save", "weights")]
    assert f.kwarg("TrainingArguments", "save_only_model").const is True  # type: ignore[union-attr]
    assert "glob" in f.imports


def test_templates_fall_back_too() -> None:
    f = read_python("{% if resume %}\ntrainer.train(resume_from_checkpoint={{ resume }})\n{% endif %}\n")
    assert not f.parsed and "train" in f.calls


def test_an_indented_here_document_body_is_dedented() -> None:
    f = read_python("    import torch\n    torch.save(model.state_dict(), p)\n")
    assert f.parsed and [r.site.line for r in f.io] == [2]


def test_non_ascii_and_crlf() -> None:
    f = read_python("# é\r\nimport torch\r\ntorch.save({'modèle': m.state_dict(), 'optimizer': o.state_dict()}, p)\r\n")
    assert f.parsed and f.io[0].keys == ("modèle", "optimizer") and f.io[0].site.line == 3


# ---------------------------------------------------------------------------------------------
# never raise; linear time


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_random_text_never_raises(text: str) -> None:
    f = read_python(text)
    assert isinstance(f, PyFacts)


def _corpus_sources() -> list[str]:
    return [(CORPUS / n / fn).read_text() for n, fn, _ in CASES]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_corpus_never_raises(data: st.DataObject) -> None:
    src = data.draw(st.sampled_from(_corpus_sources()))
    ops = data.draw(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 40), st.text(max_size=12)), max_size=6))
    for pos, cut, ins in ops:
        p = pos % (len(src) + 1)
        src = src[:p] + ins + src[p + cut :]
    f = read_python(src)
    assert isinstance(f, PyFacts)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_line_shuffled_corpus_never_raises(data: st.DataObject) -> None:
    lines = data.draw(st.sampled_from(_corpus_sources())).splitlines()
    rnd = random.Random(data.draw(st.integers(0, 2**32)))
    rnd.shuffle(lines)
    read_python("\n".join(lines))


def test_pathological_inputs() -> None:
    for src in (
        "(" * 5000,
        "x = " + "[" * 3000 + "]" * 3000,
        "f" + "()" * 5000,
        "a" + ".b" * 5000,
        "\x00import torch",
        "x = 1 +" * 2000,
        "'''" + "a" * 10_000,
        "def f(:\n" * 1000,
    ):
        assert isinstance(read_python(src), PyFacts)
    assert isinstance(read_python(b"import torch\n"), PyFacts)  # type: ignore[arg-type]


def _big(n_blocks: int) -> str:
    block = (
        "def train_{i}(args):\n"
        "    ckpts = sorted(glob.glob(os.path.join(args.output_dir, 'checkpoint-*')),\n"
        "                   key=lambda p: int(p.split('-')[-1]))\n"
        "    state = {{'model': model.state_dict(), 'optimizer': optimizer.state_dict(), 'step': step}}\n"
        "    torch.save(state, os.path.join(args.output_dir, f'checkpoint-{{step}}.pt'))\n"
        "    print(f'[checkpoint] saved {{step}}', flush=True)\n"
        "    for x in range(10):\n"
        "        y = x * 2 + 1\n"
        "        if y > 3:\n"
        "            logger.info('value %s', y)\n"
        "    return ckpts[-1] if ckpts else None\n"
    )
    return "import glob, os, torch\n" + "".join(block.format(i=i) for i in range(n_blocks))


def test_a_megabyte_script_is_read_whole() -> None:
    """1.1 MB of dense code: every save and every discovery found. How long it takes (against `ast.parse`
    of the same text, and as the input grows) is measured in bench/bench_program_readers.py, not here: a
    timed test fails on a loaded machine and proves nothing on a quiet one."""
    src = _big(2200)
    assert len(src) > 1_000_000
    f = read_python(src)
    assert f.parsed and len(f.io) >= 2200 and f.discovery


def test_a_megabyte_unparseable_script_is_still_searched() -> None:
    src = _big(2200).replace("def train_7(args):", "def train_7(args:")
    f = read_python(src)
    assert not f.parsed and f.io


def test_the_ast_module_is_left_as_found() -> None:
    # the reader turns the garbage collector off while it works and back on afterwards
    import gc

    assert gc.isenabled()
    read_python("x = 1\n")
    assert gc.isenabled()
    assert ast.parse("x = 1")


# ---------------------------------------------------------------------------------------------
# the remaining API points


def test_resume_values_for_the_resume_true_rule() -> None:
    f = read_python(
        "import argparse, os\nfrom transformers import Trainer\np = argparse.ArgumentParser()\n"
        "p.add_argument('--resume', action='store_true')\nargs = p.parse_args()\ntrainer = Trainer(model=m)\n"
        "trainer.train(resume_from_checkpoint=args.resume)\n"
        "trainer.train(resume_from_checkpoint=os.environ.get('RESUME'))\n"
        "trainer.train(True)\n"
    )
    a, b, c = (call.kwargs["resume_from_checkpoint"] for call in f.calls["train"])
    assert (a.known, a.const, a.origin, a.option) == (True, False, "argparse-default", "--resume")
    assert (b.known, b.origin, b.env) == (False, "env", "RESUME")
    assert (c.known, c.const) == (True, True)
    assert f.calls["train"][2].args[0].const is True


def test_first_kwarg_and_qualname() -> None:
    f = read_python(
        "import transformers as tf\nargs = tf.TrainingArguments(output_dir='a', save_total_limit=None)\n"
        "tf.TrainingArguments(output_dir='b')\n"
    )
    assert f.first("TrainingArguments").qualname == "transformers.TrainingArguments"  # type: ignore[union-attr]
    assert f.kwarg("TrainingArguments", "output_dir").const == "a"  # type: ignore[union-attr]
    v = f.kwarg("TrainingArguments", "save_total_limit")
    assert v is not None and v.known and v.const is None  # given as None: not the same as absent
    assert f.kwarg("TrainingArguments", "save_steps") is None
    assert f.first("nothing") is None


def test_llamafactory_run_exp_and_accelerator_and_deepspeed_initialize() -> None:
    f = read_python(
        "from llamafactory.train.tuner import run_exp\nfrom accelerate import Accelerator\nimport deepspeed\n"
        "run_exp({'stage': 'sft', 'overwrite_output_dir': True, 'output_dir': '/mnt/ckpt'})\n"
        "acc = Accelerator(project_dir='/mnt/ckpt/acc')\nacc.load_state()\n"
        "engine, *_ = deepspeed.initialize(model=m, config='ds.json')\n"
    )
    assert f.kwarg("run_exp", "overwrite_output_dir").const is True  # type: ignore[union-attr]
    assert f.kwarg("Accelerator", "project_dir").const == "/mnt/ckpt/acc"  # type: ignore[union-attr]
    assert f.kwarg("deepspeed.initialize", "config").const == "ds.json"  # type: ignore[union-attr]
    assert [(d.kind, d.selector, d.root) for d in f.discovery] == [("framework", "load_state", "'/mnt/ckpt/acc'")]


def test_fabric_save_and_load() -> None:
    f = read_python(
        "import lightning as L\nfabric = L.Fabric()\n"
        "state = {'model': model, 'optimizer': optimizer, 'iteration': it}\nfabric.save('ckpt/last.ckpt', state)\n"
        "fabric.load('ckpt/last.ckpt', {'model': model})\n"
    )
    assert [(r.op, r.api, r.content) for r in f.io] == [
        ("save", "fabric.save", "full"),
        ("load", "fabric.load", "weights"),
    ]


def test_iter_sites_lists_every_cited_line() -> None:
    from ckpt_doctor.facts.program.python import iter_sites

    f = read_python((CORPUS / "alauda-guide-runtime" / "train.py").read_text())
    lines = {s.line for s in iter_sites(f)}
    assert f.sigterm_handler is not None and f.sigterm_handler.line in lines
    assert all(d.site.line in lines for d in f.discovery)


def test_a_torch_load_helper_is_followed_to_its_callers() -> None:
    f = read_python(
        "import torch\ndef load_checkpoint(p):\n    return torch.load(p, map_location='cpu')\n"
        "ck = load_checkpoint(path)\nmodel.load_state_dict(ck['model'])\noptimizer.load_state_dict(ck['optim'])\n"
    )
    (r, *_rest) = f.io
    assert (r.api, r.content, set(r.keys)) == ("torch.load", "full", {"model", "optim"})


def test_the_text_fallback_skips_definitions() -> None:
    f = read_python("class MyTrainer(Trainer):\n    def train(self, x):\n        print 'old'\nMyTrainer(args=a)\n")
    assert not f.parsed and [c.site.line for c in f.calls["Trainer"]] == [4]


@pytest.mark.parametrize(
    ("src", "exit"),
    [
        # the handler exits itself
        ("import signal, sys\ndef h(*a):\n    save()\n    sys.exit(0)\nsignal.signal(signal.SIGTERM, h)\n", "zero"),
        ("import signal, sys\ndef h(*a):\n    sys.exit()\nsignal.signal(signal.SIGTERM, h)\n", "zero"),
        ("import signal, sys\ndef h(*a):\n    sys.exit(128 + 15)\nsignal.signal(signal.SIGTERM, h)\n", "nonzero"),
        ("import signal\ndef h(*a):\n    raise SystemExit(1)\nsignal.signal(signal.SIGTERM, h)\n", "nonzero"),
        ("import signal\ndef h(*a):\n    raise KeyboardInterrupt\nsignal.signal(signal.SIGTERM, h)\n", "nonzero"),
        (
            "import signal\ndef h(*a):\n    raise KeyboardInterrupt\nsignal.signal(signal.SIGTERM, h)\n"
            "try:\n    train()\nexcept KeyboardInterrupt:\n    save()\n",
            "unknown",
        ),
        (
            "import os, signal\ndef h(*a):\n    save()\n    signal.signal(signal.SIGTERM, signal.SIG_DFL)\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\nsignal.signal(signal.SIGTERM, h)\n",
            "nonzero",
        ),
        # the handler sets a flag the loop reads, then the program falls off its end
        (
            "import signal\nSTOP = {'now': False}\nsignal.signal(signal.SIGTERM, lambda *_: STOP.update(now=True))\n"
            "while step < 100:\n    step += 1\n    if STOP['now']:\n        save()\n        break\n",
            "zero",
        ),
        # the same with the fix: exit non-zero after the signal-triggered save
        (
            "import signal, sys\nSTOP = {'now': False}\n"
            "signal.signal(signal.SIGTERM, lambda *_: STOP.update(now=True))\n"
            "while step < 100:\n    step += 1\n    if STOP['now']:\n        save()\n        break\n"
            "if STOP['now']:\n    sys.exit(143)\n",
            "nonzero",
        ),
        # a flag nothing reads: training goes on until SIGKILL
        ("import signal\nstop = [0]\nsignal.signal(signal.SIGTERM, lambda *_: stop.append(1))\ntrain()\n", "continues"),
        # a handler defined elsewhere
        ("import signal\nfrom helpers import on_term\nsignal.signal(signal.SIGTERM, on_term)\n", "unknown"),
        # the exit code at the end comes from something that cannot be told
        (
            "import signal, sys\nSTOP = [False]\ndef h(*a):\n    STOP[0] = True\nsignal.signal(signal.SIGTERM, h)\n"
            "while not STOP[0]:\n    step()\nsys.exit(code_of(run))\n",
            "unknown",
        ),
    ],
)
def test_how_the_program_ends_after_sigterm(src: str, exit: str) -> None:
    end = read_python(src).sigterm_end
    assert end is not None and end.exit == exit, end


def test_lightning_callback_that_stops_on_sigterm_exits_zero() -> None:
    src = (
        "import lightning as L\nclass C(L.Callback):\n    def on_train_batch_end(self, trainer, *a):\n"
        "        if trainer.received_sigterm:\n            trainer.save_checkpoint('last.ckpt')\n"
        "            trainer.should_stop = True\nL.Trainer(callbacks=[C()]).fit(model)\n"
    )
    end = read_python(src).sigterm_end
    assert end is not None and end.exit == "zero" and end.stop is not None and "should_stop" in end.stop.text


@pytest.mark.parametrize(
    "src",
    [
        "import lightning as L\nL.Trainer().fit(model)\n",
        "import pytorch_lightning as pl\ntrainer = pl.Trainer(max_steps=9)\ntrainer.fit(m, ckpt_path='last')\n",
        "from lightning.pytorch import Trainer\ndef main():\n    t = Trainer()\n    t.fit(model)\nmain()\n",
        # an `except Exception` does not catch SIGTERMException (a SystemExit)
        "import lightning as L\ntry:\n    L.Trainer().fit(model)\nexcept Exception:\n    raise\n",
    ],
)
def test_lightning_without_a_handler_of_its_own_exits_zero_after_sigterm(src: str) -> None:
    """Lightning's own handler: SIGTERMException is a SystemExit without a code (recordings
    lightning-2.5/2.6-sigterm-no-handler-take2: exit 0 after SIGTERM)."""
    end = read_python(src).sigterm_end
    assert end is not None and end.exit == "zero" and "SIGTERMException" in end.why, end
    assert end.handler.text.rstrip().endswith(")") and "fit(" in end.handler.text


@pytest.mark.parametrize(
    "src",
    [
        "import sys\nimport lightning as L\nfrom lightning.pytorch.utilities.exceptions import SIGTERMException\n"
        "try:\n    L.Trainer().fit(model)\nexcept SIGTERMException:\n    sys.exit(143)\n",
        "import lightning as L\ntry:\n    L.Trainer().fit(model)\nexcept SystemExit as e:\n    finish(e)\n",
        "import lightning as L\ntry:\n    L.Trainer().fit(model)\nexcept:\n    cleanup()\n",
        "import lightning as L\nclass C(L.Callback):\n    def on_exception(self, trainer, module, exc):\n"
        "        handle(exc)\nL.Trainer(callbacks=[C()]).fit(model)\n",
    ],
)
def test_lightning_with_sigterm_exception_caught_is_not_followed(src: str) -> None:
    end = read_python(src).sigterm_end
    assert end is not None and end.exit == "unknown" and end.stop is not None, end


@pytest.mark.parametrize(
    "src",
    [
        "from sklearn.linear_model import LinearRegression\nLinearRegression().fit(X, y)\n",
        "import keras\nmodel = keras.Sequential()\nmodel.fit(x, y)\n",
    ],
)
def test_a_fit_that_is_not_lightning_says_nothing_of_sigterm(src: str) -> None:
    assert read_python(src).sigterm_end is None


def test_a_lightning_script_s_own_handler_decides_over_lightning_s() -> None:
    src = (
        "import signal, sys\nimport lightning as L\ndef h(*a):\n    sys.exit(143)\n"
        "signal.signal(signal.SIGTERM, h)\nL.Trainer().fit(model)\n"
    )
    end = read_python(src).sigterm_end
    assert end is not None and end.exit == "nonzero", end

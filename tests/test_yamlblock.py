"""The block-style reader (yamlblock) gives PyYAML's safe loader's values, or leaves the text to it.

The reader exists for speed (issue 23: kubectl's YAML read within 2x of JSON); its contract is equality. Wherever
it answers, the documents must be exactly those of `yaml.load_all(text, CSafeLoader)`: the same types (1 is not
True is not 1.0), keys in the same order. Wherever it is not sure it answers None, and the loader reads the text,
errors and all. Checked on every YAML file of the repository, on PyYAML's dumps of their data at three widths
(folded, quoted and literal scalars), on edge cases, and on a fixed sweep of mutated texts.
"""

from __future__ import annotations

import datetime
import math
import random
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from ckpt_doctor import yamlio
from ckpt_doctor.errors import InputError
from ckpt_doctor.yamlblock import read_block_style

ROOT = Path(__file__).resolve().parents[1]
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types, mappings in the same order (1 == True == 1.0 in Python: not here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            same(k1, k2) and same(v1, v2) for (k1, v1), (k2, v2) in zip(a.items(), b.items(), strict=True)
        )
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def block(text: str) -> list[Any] | None:
    b = yamlio._Builder(text, "t.yaml")
    return read_block_style(text, b._plain, yamlio.MAX_NODES, yamlio.MAX_DEPTH, time.monotonic() + 60, b._timeout)


def agrees(text: str) -> bool | None:
    """None if the reader left `text` to the loader, else whether it read what PyYAML reads."""
    got = block(text)
    if got is None:
        return None
    try:
        want = list(yaml.load_all(text, Loader=LOADER))
    except Exception:  # PyYAML refusing a text the reader read is a disagreement
        return False
    return same(got, want)


def _repository_texts() -> list[tuple[str, str]]:
    out = []
    for pattern in ("**/*.yaml", "**/*.yml"):
        for f in sorted(ROOT.glob(pattern)):
            if ".venv" in f.parts or ".git" in f.parts:
                continue
            try:
                text = f.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if len(text) < 2_000_000:
                out.append((str(f.relative_to(ROOT)), text))
    return out


REPO = _repository_texts()


def test_every_yaml_file_of_the_repository_and_its_dumps_read_alike() -> None:
    read = 0
    for i, (name, text) in enumerate(REPO):
        got = agrees(text)
        assert got is not False, name
        read += got is True
        if i % 4:  # PyYAML's dumps of every fourth file's data (most files are bundles alike)
            continue
        try:
            docs = list(yaml.load_all(text, Loader=LOADER))
        except yaml.YAMLError:
            continue
        for width in (20, 80):  # 80 is go-yaml's (kubectl's): long strings folded over lines
            dumped = yaml.dump_all(docs, Dumper=DUMPER, default_flow_style=False, width=width, allow_unicode=True)
            assert agrees(dumped) is not False, f"{name} dumped at width {width}"
    assert len(REPO) > 100 and read > len(REPO) // 2  # the reader does read most of them


KUBECTL = """\
apiVersion: v1
items:
- apiVersion: v1
  kind: Pod
  metadata:
    annotations:
      kubectl.kubernetes.io/last-applied-configuration: |
        {"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}
      note: |-
        two lines,

        a blank between
    creationTimestamp: "2026-11-30T08:00:00Z"
    labels:
      app.kubernetes.io/name: trainer
      "1": one
    name: big-run-node-0-0
    resourceVersion: "5000"
  spec:
    containers:
    - args:
      - --resume_from_checkpoint
      - "true"
      command:
      - bash
      - -c
      - |
        set -e
        torchrun train.py --save_steps 500
      env:
      - name: MODE
        value: "0755"
      - name: EMPTY
      image: ghcr.io/example-org/sft-trainer:1.4.2
      resources: {}
      volumeMounts: []
  status:
    conditions:
    - lastProbeTime: null
      message: 'containers with unready status: [node]; the message is long enough
        to be folded over two lines by go-yaml'
      status: "False"
      type: Ready
    containerStatuses:
    - lastState:
        terminated:
          exitCode: 137
          message: a plain message long enough that go-yaml folds it over the next
            line as kubectl writes it
          reason: OOMKilled
      ready: false
      restartCount: 3
kind: List
metadata:
  resourceVersion: ""
"""

# read by the reader, and as PyYAML reads them
READ = [
    KUBECTL,
    "a: b\n---\nc: d\n",
    "---\n---\n",
    "a: |+\n  x\n\n\nb: 1\n",
    "- |\n x\n- y\n",
    "a:\n- b\n- c\nd: e\n",
    "a:\n  - b\n  -\n  - c: 1\n    d: 2\n",
    "a: 'x\n  y ''z'''\n",
    "a: 'x\n\n\n  y'\nb: '\n  z'\n",
    "a: x\n  y\n  z\n",
    'k: "\\x41\\u00e9\\t\\\\"\n',
    "yes: no\non: off\nk: 0755\nj: 1_000\nh: 0x1F\ni: 190:20:30\nf: .inf\nn: ~\nd: 2001-12-14\nt: 1e3\n",
    "'1': a\n\"2\": b\n1: c\n",
    "a: 1\na: 2\n",
    "a:: b\n",
    "a: {}\nb: []\nc:\n",
]
# left to PyYAML: anything outside the block style, or not surely read alike
LEFT = [
    "a: b # a comment\n",
    "# a comment\na: b\n",
    "a: &x 1\nb: *x\n",
    "<<: {a: 1}\n",
    "=: a\n",
    "a: !!str 1\n",
    "a: [1]\n",
    "a: >\n  folded\n",
    "a: |2\n   x\n",
    "a: b\n\n  c\n",
    'a: "x\n  y"\n',
    "a:\tb\n",
    "a: 1",
    "\ufeffa: 1\n",
    "a: b\r\nc: d\r\n",
    "? a\n: b\n",
    "  a: 1\n",
    "a:\n  b\n",
    "a: b\n...\n",
    "%YAML 1.1\n---\na: 1\n",
]
# refused by PyYAML: left to it, so the error is its own
REFUSED = [
    "a: b: c\n",
    "a: b:\n",
    "k: - x\n",
    "- a\nb: c\n",
    "a:\n  - b\n  c: 1\n",
    "a:\n  b: 1\n c: 2\n",
    "a: |\n    x\n   y\n",
    "a: 'x'y'\n",
    "k: '\n",
    'k: "\\q"\n',
    "a: |\n   \n  x\n",
    "a: 2001-13-14\n",
]


@pytest.mark.parametrize("text", READ)
def test_the_block_style_is_read_as_pyyaml_reads_it(text: str) -> None:
    assert agrees(text) is True


@pytest.mark.parametrize("text", LEFT)
def test_what_is_not_surely_read_alike_is_left_to_pyyaml(text: str) -> None:
    assert block(text) is None
    assert same(
        list(yamlio.iter_documents(text, "t.yaml")), [d for d in yaml.load_all(text, Loader=LOADER) if d is not None]
    )


@pytest.mark.parametrize("text", REFUSED)
def test_what_pyyaml_refuses_is_refused_in_its_words(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert block(text) is None
    with pytest.raises((yaml.YAMLError, ValueError)):
        list(yaml.load_all(text, Loader=LOADER))
    with pytest.raises(InputError) as got:
        list(yamlio.iter_documents(text, "t.yaml"))
    monkeypatch.setattr(yamlio, "read_block_style", lambda *args: None)  # libyaml's events alone, as before
    with pytest.raises(InputError) as alone:
        list(yamlio.iter_documents(text, "t.yaml"))
    assert got.value.message == alone.value.message


def _mutate(rng: random.Random, text: str) -> str:
    pieces = [*" :-'\"#|>&*!{}[],?\n\\abz01.", "  ", ": ", "- ", "''", "|-", "---\n", "yes", "0755", "~", "\u00e9"]
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        line, op = lines[i], rng.random()
        if op < 0.35 and line:
            p = rng.randrange(len(line) + 1)
            lines[i] = line[:p] + rng.choice(pieces) + line[p:]
        elif op < 0.55 and line:
            p = rng.randrange(len(line))
            lines[i] = line[:p] + line[p + 1 :]
        elif op < 0.75:
            lines[i] = " " * rng.randint(1, 3) + line if rng.random() < 0.5 else line[rng.randint(1, 2) :]
        elif op < 0.85 and len(lines) > 1:
            del lines[i]
        else:
            lines.insert(i, rng.choice(lines))
    return "\n".join(lines)


def test_mutated_texts_are_read_alike_or_left_to_pyyaml() -> None:
    """A fixed sweep (the same texts every run); a longer one with other seeds found no disagreement either."""
    rng = random.Random(23)
    seeds = [KUBECTL, *READ, yaml.dump({"items": [yaml.safe_load(KUBECTL)]}, Dumper=DUMPER, width=30)]
    read = 0
    for _ in range(3000):
        text = _mutate(rng, rng.choice(seeds))
        got = agrees(text)
        assert got is not False, repr(text)
        read += got is True
    assert read > 500  # mutations the reader still reads: the sweep does test it


def test_plain_scalars_resolve_as_pyyaml_resolves_them() -> None:
    resolver = yaml.resolver.Resolver()
    rng = random.Random(7)
    alphabet = "0123456789+-.:_eExXoObB abtnyTYN~<=!&*"
    words = ["", "~", "null", "NULL", "nUll", "yes", "Yes", "on", "OFF", "y", "n", "0o17", "017", "0b101", "1_000"]
    words += ["1e3", "1.0e+3", ".inf", "-.Inf", ".NaN", "190:20:30", "<<", "=", "2001-12-14", "2001-12-14 21:59:43 -5"]
    words += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10))) for _ in range(20_000)]
    for w in words:
        assert yamlio.resolve_plain(w) == resolver.resolve(yaml.nodes.ScalarNode, w, (True, False)), w


def test_a_kubectl_list_is_read_by_the_block_reader_with_timestamps_as_pyyaml_gives_them() -> None:
    text = KUBECTL.replace('"2026-11-30T08:00:00Z"', "2026-11-30T08:00:00Z")  # unquoted: a datetime to PyYAML
    got = block(text)
    assert got is not None
    created = got[0]["items"][0]["metadata"]["creationTimestamp"]
    assert isinstance(created, datetime.datetime) and same(got, list(yaml.load_all(text, Loader=LOADER)))

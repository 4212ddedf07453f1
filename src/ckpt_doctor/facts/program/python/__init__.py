"""A training program written in Python, read through `ast`.

What the checkpoint rules need from a script is not a word somewhere in it but what the code
does: how it picks "the newest checkpoint" (`discovery`), what it saves and loads (`io`), the
keyword calls that configure a framework (`calls`), the environment it reads, whether it
handles SIGTERM, and the lines it prints (to recognise its own log lines).

`read_python` never raises. A program `ast` cannot parse (a syntax error, Python 2, a
template) is searched as text instead, and the result says so (`parsed=False`,
`confidence="low"`).

The analysis is deliberately local and conservative: names are followed through simple
bindings (`x = True; f(resume=x)`), argparse defaults and one level of function calls; anything
it cannot evaluate is reported as unknown rather than guessed.

The reader is one walk and several small readers, each answering one question from the indexes
the walk built (the way each of ruff's rules looks for one thing):

    tree.py       the walk: scopes, bindings, calls by name, subscripts, functions, classes
    values.py     what an expression's value is (literals, bindings, argparse defaults, env)
    options.py    argparse options and argument parsers
    flow.py       which names flow into which
    environ.py    the environment variables read
    signals.py    SIGTERM handlers
    prints.py     printed and logged templates
    calls.py      keyword calls that configure a framework (asks the framework modules)
    discovery.py  how "the newest checkpoint" is picked (and what framework APIs pick)
    io.py         what each save and load holds (generic APIs here, framework APIs in their modules)
    text.py       the fallback for what `ast` cannot parse
    reader.py     `read_python`: parse, walk, then ask each reader

What is framework-specific (HF Trainer's `TrainingArguments`, Lightning's `fit(ckpt_path=...)`,
`accelerator.load_state()`, DeepSpeed's `load_checkpoint`, DCP, training_hub's `sft`) lives in the
framework's module under `ckpt_doctor/frameworks/` as `PythonHooks`.

Cost is one `ast.parse` plus one walk of the tree (the garbage collector is paused meanwhile: it
would otherwise dominate on big inputs); every later question is answered from indexes built by
that walk. At most 400 sort/max/min calls are examined for discovery, so a huge generated file
yields the first 400 picks, not all of them.
"""

from __future__ import annotations

from ckpt_doctor.facts.program.python.facts import (
    Call,
    Discovery,
    Option,
    PyFacts,
    SigtermEnd,
    Site,
    StateIO,
    Value,
    iter_sites,
    template_regex,
)
from ckpt_doctor.facts.program.python.reader import read_python

__all__ = [
    "Call",
    "Discovery",
    "Option",
    "PyFacts",
    "SigtermEnd",
    "Site",
    "StateIO",
    "Value",
    "iter_sites",
    "read_python",
    "template_regex",
]

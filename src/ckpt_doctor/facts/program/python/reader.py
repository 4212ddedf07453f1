"""`read_python`: parse once, walk once, then ask each reader its question."""

from __future__ import annotations

import ast
import gc
import textwrap
import warnings

from ckpt_doctor.facts.program.python.calls import Calls
from ckpt_doctor.facts.program.python.discovery import Discoveries
from ckpt_doctor.facts.program.python.dynamic import Dynamics
from ckpt_doctor.facts.program.python.environ import Environ
from ckpt_doctor.facts.program.python.facts import (
    PyFacts,
)
from ckpt_doctor.facts.program.python.flow import Flow
from ckpt_doctor.facts.program.python.io import SavesAndLoads
from ckpt_doctor.facts.program.python.options import Options
from ckpt_doctor.facts.program.python.prints import Prints
from ckpt_doctor.facts.program.python.signals import Signals
from ckpt_doctor.facts.program.python.text import _read_text
from ckpt_doctor.facts.program.python.tree import (
    Tree,
)
from ckpt_doctor.facts.program.python.values import Values


def read_python(source: str, filename: str = "<inline>") -> PyFacts:
    """Facts about a Python training program. Never raises."""
    if isinstance(source, bytes):
        source = source.decode("utf-8", "replace")
    if not isinstance(source, str):
        source = str(source)
    source = source.lstrip("\ufeff")
    tree, text, error = _parse(source, filename)
    if tree is None:
        return _read_text(source, error)
    enabled = gc.isenabled()
    gc.disable()  # ast nodes are many small objects: the collector would dominate the run time
    try:
        return _Reader(text, tree).facts()
    except Exception as e:  # a reader bug must not take the diagnosis down: fall back to text
        facts = _read_text(source, f"analysis failed ({type(e).__name__}: {e})")
        return facts
    finally:
        if enabled:
            gc.enable()


def _parse(source: str, filename: str) -> tuple[ast.Module | None, str, str | None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "invalid escape sequence" and the like: the user's, not ours
            return _parse_quietly(source, filename)
    finally:
        if enabled:
            gc.enable()


def _parse_quietly(source: str, filename: str) -> tuple[ast.Module | None, str, str | None]:
    try:
        try:
            return ast.parse(source, filename=filename or "<inline>"), source, None
        except (SyntaxError, ValueError) as e:
            first = _describe(e)
        except (RecursionError, MemoryError) as e:
            return None, source, f"too deeply nested to parse ({type(e).__name__})"
        # a here-document body or a YAML block often keeps its indentation
        dedented = textwrap.dedent(source)
        if dedented != source:
            try:
                return ast.parse(dedented, filename=filename or "<inline>"), dedented, None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                pass
        return None, source, first
    except Exception as e:
        return None, source, f"unparseable ({type(e).__name__})"


def _describe(e: Exception) -> str:
    if isinstance(e, SyntaxError):
        where = f" (line {e.lineno})" if e.lineno else ""
        return f"SyntaxError: {e.msg}{where}"
    return f"{type(e).__name__}: {e}"


class _Reader(Values, Dynamics, Options, Flow, Environ, Signals, Prints, Calls, Discoveries, SavesAndLoads, Tree):
    """Every reader over the one walk of `Tree`."""

    def facts(self) -> PyFacts:
        self.walk()
        self._opts = self.options()
        out = PyFacts(parsed=True, error=None, confidence="high")
        out.imports = set(self.imports)
        out.options = self._opts
        out.arg_parsers = self._arg_parsers()
        out.env_reads = self._env_reads()
        out.sigterm_handler = self._sigterm()
        out.sigterm_end = self._sigterm_end()
        out.prints = self._prints()
        out.calls = self._calls()
        if out.sigterm_end is None and out.calls.get("fit"):  # no handler of its own: Lightning's
            out.sigterm_end = self._lightning_default(out.calls["fit"][0].site)
        out.discovery = self._discoveries(out.calls)
        out.io = self._io(out.calls)
        out.dynamic_names = self._dynamic_names()
        return out

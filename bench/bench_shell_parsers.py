"""Compare shell parsers for the trainer-script reader: tree-sitter-bash against bashlex.

On the corpus in tests/corpus/shell (container `-c` scripts) it measures, for each parser:

* parse success: the clean corpus parses without an error (tree-sitter: no ERROR/MISSING
  node; bashlex: no exception);
* here-documents: on a set of here-document forms, whether the parser finds the body bash
  reads (checked against bash itself when bash is installed) and keeps the commands after it;
* error tolerance: on broken variants of every corpus script (a quote dropped, a closing
  keyword dropped, the text cut at 70%, a stray `)`), whether it raises and how many of the
  clean parse's commands it still returns;
* parse time per script (median of --runs runs of each script) and import time (median of
  fresh interpreters, python's own start-up subtracted).

The third column, "reader", is ckpt_doctor.facts.program.shell (tree-sitter-bash plus its
here-document pre-scan), the module built on the winner.

    python bench/bench_shell_parsers.py            # table
    python bench/bench_shell_parsers.py --json     # figures as JSON
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

CORPUS = ROOT / "tests" / "corpus" / "shell"

LICENCES = {
    "tree-sitter": "MIT (py-tree-sitter and the tree-sitter runtime)",
    "tree-sitter-bash": "MIT (grammar and its Python binding)",
    "bashlex": "GPL-3.0-or-later: linking it would make ckpt-doctor (Apache-2.0) a GPL work",
}

# (script, the body as written (tabs of <<- stripped), names of the commands after it); with X=1,
# what bash feeds the command is the body expanded unless the delimiter is quoted
HEREDOCS: list[tuple[str, str, list[str]]] = [
    ("cat <<EOF\na $X\nEOF\necho after\n", "a $X\n", ["echo"]),
    ("cat <<'EOF'\na $X\nEOF\necho after\n", "a $X\n", ["echo"]),
    ("python - <<'PY'\nprint(1)\nPY\necho after\n", "print(1)\n", ["echo"]),
    ("cat <<-EOF\n\ta\n\tEOF\necho after\n", "a\n", ["echo"]),
    ("cat <<EOF;echo x\nbody\nEOF\necho after\n", "body\n", ["echo", "echo"]),
    ("cat <<'EOF';echo x\nbody\nEOF\necho after\n", "body\n", ["echo", "echo"]),
    ("cat <<EOF|cat\nbody\nEOF\necho after\n", "body\n", ["cat", "echo"]),
    ("cat <<EOF >out; echo x\nbody\nEOF\necho after\n", "body\n", ["echo", "echo"]),
    ('cat <<E"O"F\nbody\nEOF\necho after\n', "body\n", ["echo"]),
    ("cat <<EOF\nbody\nEOF \nEOF\necho after\n", "body\nEOF \n", ["echo"]),
    ("cat <<EOF\nbody\n  EOF\nEOF\necho after\n", "body\n  EOF\n", ["echo"]),
    ("(cat <<EOF)\nbody\nEOF\necho after\n", "body\n", ["echo"]),
    ("read -r -d '' S << EOM\nprint('x')\nEOM\nprintf '%s' \"$S\" > f.py\n", "print('x')\n", ["printf"]),
    ("x=$(cat <<EOF\nbody\nEOF\n)\necho after\n", "body\n", ["echo"]),
]


# --------------------------------------------------------------------------------- parsers


class TreeSitter:
    name = "tree-sitter-bash"

    def __init__(self) -> None:
        import tree_sitter
        import tree_sitter_bash

        self.parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))

    def parse(self, s: str) -> Any:
        return self.parser.parse(s.encode())

    def ok(self, s: str) -> bool:
        return not self.parse(s).root_node.has_error

    def commands(self, s: str) -> list[tuple[int, str]]:
        out: list[tuple[int, str]] = []
        stack = [self.parse(s).root_node]
        src = s.encode()
        while stack:
            n = stack.pop()
            if n.type == "command":
                name = n.child_by_field_name("name")
                out.append((n.start_byte, src[name.start_byte : name.end_byte].decode() if name else ""))
            stack.extend(n.children)
        return sorted(out)

    def heredoc(self, s: str) -> str | None:
        src = s.encode()
        stack = [self.parse(s).root_node]
        while stack:
            n = stack.pop(0)
            if n.type == "heredoc_body":
                end = next((c for c in n.parent.children if c.type == "heredoc_end"), None) if n.parent else None
                text = src[n.start_byte : (end.start_byte if end is not None else n.end_byte)].decode()
                if text and not text.endswith("\n"):
                    # the node may stop in the indentation of the delimiter line (<<-)
                    text = text[: text.rfind("\n") + 1] if text.rstrip(" \t").endswith("\n") else text + "\n"
                return text
            stack.extend(n.children)
        return None


class Bashlex:
    name = "bashlex"

    def __init__(self) -> None:
        import bashlex

        self.mod = bashlex

    def parse(self, s: str) -> Any:
        return self.mod.parse(s)

    def ok(self, s: str) -> bool:
        try:
            self.parse(s)
        except Exception:
            return False
        return True

    def _walk(self, s: str) -> list[Any]:
        out: list[Any] = []
        stack = list(self.parse(s))
        while stack:
            n = stack.pop()
            out.append(n)
            for attr in ("parts", "list", "command", "heredoc", "output"):
                v = getattr(n, attr, None)
                if isinstance(v, list):
                    stack.extend(v)
                elif v is not None and hasattr(v, "kind"):
                    stack.append(v)
        return out

    def commands(self, s: str) -> list[tuple[int, str]]:
        out = []
        for n in self._walk(s):
            if n.kind == "command":
                words = [p for p in n.parts if p.kind == "word"]
                out.append((n.pos[0], words[0].word if words else ""))
        return sorted(out)

    def heredoc(self, s: str) -> str | None:
        for n in sorted(self._walk(s), key=lambda n: n.pos[0]):
            if n.kind == "heredoc":
                value = n.value
                body = value.rsplit("\n", 1)[0] + "\n" if "\n" in value else ""
                return body
        return None


class Reader:
    name = "reader"

    def __init__(self) -> None:
        from ckpt_doctor.facts.program import shell

        self.mod = shell

    def parse(self, s: str) -> Any:
        return self.mod.parse_shell(s)

    def ok(self, s: str) -> bool:
        return not self.parse(s).errors

    def commands(self, s: str) -> list[tuple[int, str]]:
        return [(c._start, c.name or "") for c in self.parse(s).commands]

    def heredoc(self, s: str) -> str | None:
        prog = self.parse(s)
        return next((c.heredocs[0].raw for c in prog.commands if c.heredocs), None)

    def heredoc_expanded(self, s: str) -> str | None:
        prog = self.mod.parse_shell(s, env={"X": "1"})
        return next((c.heredoc for c in prog.commands if c.heredoc is not None), None)


# --------------------------------------------------------------------------------- corpus


def corpus() -> list[tuple[str, str]]:
    out = []
    for path in sorted(CORPUS.glob("*.yaml")):
        entry = yaml.safe_load(path.read_text())
        script = entry.get("script")
        if script is None and entry.get("argv"):
            from ckpt_doctor.facts.program.shell import split_shell_argv

            split = split_shell_argv([str(a) for a in entry["argv"]])
            script = split[1] if split else None
        if script is not None:
            out.append((path.stem, script))
    return out


def broken_variants(script: str) -> list[tuple[str, str]]:
    out = []
    for q in ('"', "'"):
        k = script.rfind(q)
        if k >= 0:
            out.append((f"drop last {q}", script[:k] + script[k + 1 :]))
            break
    for kw in ("\nfi", "done", "}", ")", "EOF\n", "PY\n", "EOM\n"):
        k = script.rfind(kw)
        if k >= 0:
            out.append((f"drop last {kw.strip()!r}", script[:k] + script[k + len(kw) :]))
            break
    out.append(("cut at 70%", script[: int(len(script) * 0.7)]))
    lines = script.split("\n")
    mid = len(lines) // 2
    out.append(("stray )", "\n".join([*lines[:mid], ")", *lines[mid:]])))
    return out


def bash_body(script: str) -> str | None:
    """What bash's first command reads, by running the script with that command replaced by cat."""
    if shutil.which("bash") is None:
        return None
    first = script.split("\n", 1)[0]
    if first.startswith(("python - ", "read ")):
        script = "cat" + first[first.index(" <<") :] + "\n" + script.split("\n", 1)[1]
    elif not first.startswith(("cat", "(cat")):
        return None
    swaps = (("echo after", ":"), ("echo x", ":"), ("|cat", ""), (">out", ""), ("printf '%s' \"$S\" > f.py", ":"))
    for a, b in swaps:
        script = script.replace(a, b)
    env = {"X": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=10)
    return out.stdout


def median_time(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        try:
            fn()
        except Exception:
            pass
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def import_time(stmt: str, runs: int = 7) -> float:
    # with a byte-code cache, as an installed wheel has (kept out of the repository)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(ROOT / "src"), PYTHONPYCACHEPREFIX=os.path.join(tempfile.gettempdir(), "bench-pycache"))

    def run(code: str) -> float:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
        return time.perf_counter() - t

    run(stmt)  # fill the cache
    base = statistics.median(run("pass") for _ in range(runs))
    return max(0.0, statistics.median(run(stmt) for _ in range(runs)) - base)


# --------------------------------------------------------------------------------- run


def measure(runs: int) -> dict[str, Any]:
    parsers = [TreeSitter(), Bashlex(), Reader()]
    scripts = corpus()
    res: dict[str, Any] = {"corpus_scripts": len(scripts), "parsers": {}}
    expected_bodies = []
    for script, body, after in HEREDOCS:
        real = bash_body(script)
        expected_bodies.append((script, body, after, real))
    for p in parsers:
        r: dict[str, Any] = {}
        ok = [name for name, s in scripts if p.ok(s)]
        r["parse_success"] = f"{len(ok)}/{len(scripts)}"
        r["parse_failures"] = sorted({name for name, _ in scripts} - set(ok))
        # here-documents
        good = 0
        details = []
        for script, body, after, _real in expected_bodies:
            try:
                got = p.heredoc(script)
                if got is not None and "<<-" in script:
                    got = "\n".join(line.lstrip("\t") for line in got.split("\n"))
                names = [n for _, n in p.commands(script)]
                first = names[1:] if names else []
                kept = first[-len(after) :] == after if after else True
                right = got == body and kept
            except Exception as exc:
                got, right = f"raised {type(exc).__name__}", False
            good += right
            details.append({"script": script.split("\n")[0], "ok": right, "body": got})
        r["heredocs"] = f"{good}/{len(expected_bodies)}"
        r["heredoc_details"] = details
        if isinstance(p, Reader):
            checked = [(s, real) for s, _b, _a, real in expected_bodies if real is not None]
            same = sum(1 for s, real in checked if p.heredoc_expanded(s) == real)
            r["heredocs_expanded_like_bash"] = f"{same}/{len(checked)}"
        # error tolerance
        raised = total = 0
        recovered: list[float] = []
        for _name, s in scripts:
            try:
                clean = len(p.commands(s))
            except Exception:
                clean = 0
            for _label, b in broken_variants(s):
                total += 1
                try:
                    n = len(p.commands(b))
                except Exception:
                    raised += 1
                    n = 0
                if clean:
                    recovered.append(min(1.0, n / clean))
        r["broken_inputs"] = total
        r["broken_raised"] = raised
        r["broken_commands_recovered"] = round(statistics.mean(recovered), 3) if recovered else 0.0
        # time
        per = [median_time(lambda s=s, p=p: p.parse(s), runs) for _n, s in scripts]
        r["parse_time_median_us"] = round(statistics.median(per) * 1e6, 1)
        r["parse_time_max_us"] = round(max(per) * 1e6, 1)
        res["parsers"][p.name] = r
    res["parsers"]["tree-sitter-bash"]["import_time_ms"] = round(
        import_time("import tree_sitter, tree_sitter_bash; tree_sitter.Language(tree_sitter_bash.language())") * 1e3,
        1,
    )
    res["parsers"]["bashlex"]["import_time_ms"] = round(import_time("import bashlex") * 1e3, 1)
    res["parsers"]["reader"]["import_time_ms"] = round(
        import_time("import ckpt_doctor.facts.program.shell as s; s.parse_shell('echo')") * 1e3, 1
    )
    own = import_time("import ckpt_doctor.facts.program.shell") - import_time("import ckpt_doctor.facts.program")
    res["parsers"]["reader"]["module_import_ms"] = round(max(0.0, own) * 1e3, 1)
    res["heredoc_bodies_checked_with_bash"] = sum(1 for e in expected_bodies if e[3] is not None)
    res["licences"] = LICENCES
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=50, help="parses of each script for the median (default 50)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    res = measure(args.runs)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    names = list(res["parsers"])
    rows = [
        ("parse success (corpus)", "parse_success"),
        ("here-documents right", "heredocs"),
        ("here-document bodies = bash's", "heredocs_expanded_like_bash"),
        ("broken inputs that raise", "broken_raised"),
        ("commands kept on broken input", "broken_commands_recovered"),
        ("parse time, median (us)", "parse_time_median_us"),
        ("parse time, slowest script (us)", "parse_time_max_us"),
        ("import time (ms)", "import_time_ms"),
    ]
    print(
        f"corpus: {res['corpus_scripts']} scripts; broken variants: "
        f"{res['parsers'][names[0]]['broken_inputs']}; here-document bodies checked with bash: "
        f"{res['heredoc_bodies_checked_with_bash']}/{len(HEREDOCS)}"
    )
    print(f"{'':34}" + "".join(f"{n:>20}" for n in names))
    for label, key in rows:
        print(f"{label:34}" + "".join(f"{res['parsers'][n].get(key, ''):>20}" for n in names))
    print(f"{'  of which shell.py itself (ms)':34}{'':>40}{res['parsers']['reader']['module_import_ms']:>20}")
    print(
        "  (the reader's import time includes the ckpt_doctor package it lives in; shell.py imports\n"
        "   tree-sitter only when it parses)"
    )
    for n in names:
        fails = res["parsers"][n]["parse_failures"]
        if fails:
            print(f"\n{n} fails on: {', '.join(fails)}")
        bad = [d["script"] for d in res["parsers"][n]["heredoc_details"] if not d["ok"]]
        if bad:
            print(f"{n} gets these here-documents wrong: " + "; ".join(repr(b) for b in bad))
    print("\nlicences:")
    for k, v in res["licences"].items():
        print(f"  {k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

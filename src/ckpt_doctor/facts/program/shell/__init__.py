"""A container's shell script read the way bash reads it.

Kubeflow trainer containers very often run ``bash -c "<script>"``. This module reads such a
script with a real parser (tree-sitter-bash) and answers what callers need:

* every simple command, in source order, with its words expanded the way bash would expand
  them (assignments and ``export`` earlier in the script, the container's env, ``${VAR:-x}``,
  quoting, word splitting, arrays) and with the parts that cannot be known statically
  (``$(hostname)``, ``$RANDOM``, unset variables) reported instead of guessed;
* here-documents as bash reads them (tree-sitter-bash gets several forms wrong, so a small
  pre-scanner finds them first; see ``_prescan``);
* the command that starts training, and whether SIGTERM reaches it (``ShellProgram.pid1``),
  following what was measured with bash 5.2.15 and dash 0.5.12 running as PID 1 in a PID
  namespace (``/work/shared/knowledge/guide-and-frameworks.md`` §2, contracts §6).

The reader is a walk and small readers, one idea per file:

    invocation.py  argv -> the shell script (`bash -c`, behind env/tini/mpirun)
    kube.py        kubelet's `$(VAR)` expansion
    heredoc.py     here-documents, pre-scanned as bash reads them
    walk.py        the statement tree: sequences, branches, loops, functions, pipelines
    assign.py      assignments, export/declare/local/readonly, unset
    expand.py      word expansion: quoting, parameters, arithmetic, splitting, arrays
    env.py         the variables as the script runs
    commands.py    simple commands with their words, redirections and environment
    builtins.py    cd, trap, set, read, files written with `cat > f <<EOF`
    trainer.py     which command starts training (the frameworks' tools come from their modules)
    tail.py        how it is run: exec, PID 1, pipelines, traps
    pid1.py        whether SIGTERM reaches the trainer
    program.py     what the reader returns (Word, Command, ShellProgram, ...)
    parse.py       the entry points

Nothing here runs a shell, touches the file system or imports anything heavy at import time:
the parser is imported inside ``_parser()`` the first time a script is read.
"""

from __future__ import annotations

from ckpt_doctor.facts.program.shell.invocation import SHELLS, shell_invocation, split_shell_argv
from ckpt_doctor.facts.program.shell.kube import kube_env, kube_expand
from ckpt_doctor.facts.program.shell.parse import expand_word, parse_argv, parse_shell
from ckpt_doctor.facts.program.shell.program import Command, HereDoc, ShellInvocation, ShellProgram, Trap, Word
from ckpt_doctor.facts.program.shell.trainer import trainer_kind

# raise instead of recording "internal error" (tests set this; callers never need it)
_STRICT = False

__all__ = [
    "SHELLS",
    "Command",
    "HereDoc",
    "ShellInvocation",
    "ShellProgram",
    "Trap",
    "Word",
    "expand_word",
    "kube_env",
    "kube_expand",
    "parse_argv",
    "parse_shell",
    "shell_invocation",
    "split_shell_argv",
    "trainer_kind",
]

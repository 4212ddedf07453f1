"""`lint --fix`: rewrite manifests in place for the fixes that are mechanical.

A fix is mechanical when there is one right edit and it needs no judgement: add the ancestor
label, move env from overrides to spec.trainer.env, turn podTemplateOverrides/podSpecOverrides
into runtimePatches on Trainer v2.2+, add failurePolicy.maxRestarts (with backoffLimit 0),
set backoffLimit 0, put `exec` before the trainer command. Everything else is reported and left
alone. Edits are splices of the original text (see yamledit), so comments, key order, quoting
and the lines around them stay as they were; a file with nothing to fix is never written.
"""

from __future__ import annotations

import difflib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckpt_doctor.errors import InputError
from ckpt_doctor.fix import fixers
from ckpt_doctor.fix.yamledit import NotMechanical
from ckpt_doctor.lint import LintResult, lint_manifests
from ckpt_doctor.sources.manifests import ManifestFile, load_manifests

__all__ = ["FIXABLE", "AppliedFix", "FileChange", "FixOutcome", "NotMechanical", "fix_result"]

# rule id -> (order, fixer); a fixer edits one object of one file's text and returns the new text
FIXABLE: dict[str, tuple[int, Callable[..., str | None]]] = {
    "env-in-pod-template-overrides": (1, fixers.move_env_to_trainer),
    "override-field-unsupported": (2, fixers.overrides_to_runtime_patches),
    "missing-ancestor-label": (3, fixers.add_ancestor_label),
    "no-failure-policy": (4, fixers.add_failure_policy),
    "backoff-limit-fights-restarts": (5, fixers.zero_backoff_limit),
    "sigterm-not-forwarded": (6, fixers.exec_trainer),
}


@dataclass
class AppliedFix:
    rule: str
    file: str
    line: int | None
    what: str

    def message(self) -> str:
        at = f"{self.file}:{self.line}" if self.line else self.file
        return f"fixed {self.rule} in {at}: {self.what}"


@dataclass
class FileChange:
    file: ManifestFile
    old: str
    new: str
    applied: list[AppliedFix] = field(default_factory=list)

    def diff(self) -> str:
        name = self.file.display
        return "".join(
            difflib.unified_diff(
                self.old.splitlines(keepends=True), self.new.splitlines(keepends=True), f"a/{name}", f"b/{name}"
            )
        )


@dataclass
class FixOutcome:
    before: LintResult
    after: LintResult
    changes: list[FileChange]
    not_fixed: list[str]  # fixable findings whose fix needs a human, with the reason
    written: bool

    @property
    def diff(self) -> str:
        return "".join(c.diff() for c in self.changes)

    def messages(self) -> list[str]:
        out = [a.message() for c in self.changes for a in c.applied]
        out += self.not_fixed
        return out


def _targets(result: LintResult) -> list[tuple[int, str, dict[str, Any], Any]]:
    seen: set[tuple[Any, ...]] = set()
    out = []
    for f in result.failed():
        if f.rule.id not in FIXABLE:
            continue
        s = f.result.subject or {}
        key = (f.rule.id, s.get("file"), s.get("kind"), s.get("namespace"), s.get("name"))
        if key in seen:
            continue
        seen.add(key)
        out.append((FIXABLE[f.rule.id][0], f.rule.id, s, f))
    out.sort(key=lambda t: (t[0], str(t[2].get("file")), int(t[2].get("line") or 0)))
    return out


def fix_result(result: LintResult, write: bool = True) -> FixOutcome:
    """Apply every mechanical fix the lint result calls for; lint the fixed files again."""
    files = {mf.display: mf for mf in result.manifests.files}
    texts: dict[str, str] = {d: mf.text for d, mf in files.items()}
    applied: dict[str, list[AppliedFix]] = {}
    not_fixed: list[str] = []
    for _order, rule_id, subject, finding in _targets(result):
        display = str(subject.get("file") or "")
        mf = files.get(display)
        at = f"{display}:{subject.get('line')}" if subject.get("line") else display or "?"
        if mf is None:
            not_fixed.append(f"not fixed {rule_id} ({at}): the object is not in one of the files (a built-in runtime?)")
            continue
        fixer = FIXABLE[rule_id][1]
        try:
            new = fixer(texts[display], subject, finding, result.version)
        except NotMechanical as e:
            not_fixed.append(f"not fixed {rule_id} ({at}): {e}")
            continue
        if new is None or new == texts[display]:
            continue
        texts[display] = new
        applied.setdefault(display, []).append(AppliedFix(rule_id, display, subject.get("line"), fixers.WHAT[rule_id]))
    changes = [
        FileChange(files[d], files[d].text, texts[d], applied.get(d, [])) for d in texts if texts[d] != files[d].text
    ]
    written = False
    if write:
        for c in changes:
            if c.file.path is None:
                not_fixed.append(f"not written {c.file.display}: standard input cannot be fixed in place (--dry-run)")
                continue
            if not c.file.utf8:
                not_fixed.append(
                    f"not written {c.file.display}: it is not valid UTF-8, and a rewrite would change bytes"
                )
                continue
            write_atomically(c.file.path, c.new, c.file.display)
            written = True
    after = _relint(result, {c.file.path: c.new for c in changes if c.file.path is not None}, texts)
    return FixOutcome(result, after, changes, not_fixed, written)


def write_atomically(path: Path, text: str, display: str) -> None:
    """Replace `path` in one step, so Ctrl-C or a full disk never leaves a half-written manifest."""
    tmp = path.with_name(f".{path.name}.ckpt-doctor-fix")
    try:
        tmp.write_text(text, encoding="utf-8")
        shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write the fixed file: {e.strerror or e}", display) from None


def _relint(result: LintResult, overrides: dict[Path, str], texts: dict[str, str]) -> LintResult:
    paths = _paths_of(result)
    stdin = texts.get("<stdin>")
    flag = result.version.version if result.version.source == "flag" else None
    mset = load_manifests(paths, stdin_text=stdin, overrides=overrides)
    return lint_manifests(mset, flag)


def _paths_of(result: LintResult) -> list[str]:
    return list(result.manifests.paths)

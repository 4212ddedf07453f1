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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ckpt_doctor.errors import InputError
from ckpt_doctor.fix import fixers
from ckpt_doctor.fix.yamledit import NotMechanical
from ckpt_doctor.lint import LintResult, lint_manifests
from ckpt_doctor.safewrite import WriteFailed, WriteRefused, Written, edit_in_place, match_newlines
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

    def message(self, dry_run: bool = False) -> str:
        at = f"{self.file}:{self.line}" if self.line else self.file
        return f"{'would fix' if dry_run else 'fixed'} {self.rule} in {at}: {self.what}"


@dataclass
class FileChange:
    file: ManifestFile
    old: str
    new: str
    applied: list[AppliedFix] = field(default_factory=list)
    written: Written | None = None
    refused: str | None = None  # why the fixed text was not written

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

    @property
    def written(self) -> bool:
        return any(c.written is not None for c in self.changes)

    @property
    def diff(self) -> str:
        return "".join(c.diff() for c in self.changes)

    def messages(self) -> list[str]:
        out: list[str] = []
        for c in self.changes:
            if c.refused is not None:
                continue  # said in not_fixed
            out += [a.message(dry_run=c.written is None) for a in c.applied]  # not written: a dry run
            if c.written is not None:
                out.append(c.written.describe())
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
        rendered = mf.rendered_by if mf is not None else result.manifests.rendered_by(display)
        if rendered:  # what is judged is the rendered object; which source to edit is a judgement call
            not_fixed.append(f"not fixed {rule_id} ({at}): linted as rendered by {rendered}; edit its sources")
            continue
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
        FileChange(files[d], files[d].text, match_newlines(files[d].text, texts[d]), applied.get(d, []))
        for d in texts
        if texts[d] != files[d].text
    ]
    if write:
        for c in changes:
            if c.file.path is None:
                c.refused = "standard input cannot be fixed in place (--dry-run)"
            elif not c.file.utf8:
                c.refused = "it is not valid UTF-8, and a rewrite would change bytes"
            else:
                try:  # mkstemp beside it, os.replace, mode kept; a symlink is edited where it points
                    c.written = edit_in_place(c.file.path, c.new)
                except WriteFailed as e:  # the system said no: exit 3, nothing half-written
                    raise InputError(f"cannot write the fixed file: {e.reason}", c.file.display) from None
                except WriteRefused as e:  # our rules said no (read-only, hard links): said, and the rest goes on
                    c.refused = e.message
            if c.refused is not None:
                not_fixed.append(f"not written {c.file.display}: {c.refused}")
    on_disk = [c for c in changes if c.file.path is not None and (not write or c.written is not None)]
    after = _relint(result, {c.file.path: c.new for c in on_disk if c.file.path is not None}, texts)
    return FixOutcome(result, after, changes, not_fixed)


def _relint(result: LintResult, overrides: dict[Path, str], texts: dict[str, str]) -> LintResult:
    paths = _paths_of(result)
    stdin = texts.get("<stdin>")
    flag = result.version.version if result.version.source == "flag" else None
    mset = load_manifests(paths, stdin_text=stdin, overrides=overrides)
    return lint_manifests(mset, flag)


def _paths_of(result: LintResult) -> list[str]:
    return list(result.manifests.paths)

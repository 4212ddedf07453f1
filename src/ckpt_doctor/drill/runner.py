"""The drill as a state machine: the steps in playbook order, each pending → running → an outcome.

Outcomes: passed, failed (its expectation was not met: the engine's diagnosis says why), skipped (the user
declined it, or did not choose it), stopped (Ctrl-C, SIGTERM, abort), error (the step could not do what it is
for: the cluster or an input failed, an API refused, a wait timed out before its action), not_run (an earlier
step ended the drill), planned (--dry-run). A failed or erring step ends the drill; cleanup runs on every path
out of `run()`, shielded from signals, and may run again (every undo first reads what is there). `run()`
never raises: whatever happens (an unexpected answer, a bug) ends as a step's error, and the verdict comes
from drill/verdict.py, the one decision every face shows.

Steps do their work through this class: `change()` shows a change's kubectl lines and asks (unless
--yes), then applies it; `wait()` polls a condition with progress until the step's deadline. The
step bodies are in drill/steps.py, the undo in drill/cleanup.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ckpt_doctor.drill import marks
from ckpt_doctor.drill.actions import Actions, Change, ClusterLost, Scope
from ckpt_doctor.drill.console import Clock, Console
from ckpt_doctor.drill.interrupt import Abandoned, Interrupts, NoInterrupts, Stopped
from ckpt_doctor.drill.playbook import Playbook, Step, choose_steps, load_playbook
from ckpt_doctor.drill.result import Command, DrillResult, StepResult, now
from ckpt_doctor.errors import InputError, InternalError, UsageError
from ckpt_doctor.sources.live.client import CallError

if TYPE_CHECKING:
    from ckpt_doctor.engine.walk import Diagnosis
    from ckpt_doctor.sources.manifests import ManifestSet

T = TypeVar("T")


@dataclass
class Options:
    """What the user asked for (commands/drill.py fills it in from the flags)."""

    target: str | None = None  # [NS/]NAME to attach to
    submit: tuple[str, ...] = ()  # manifests to submit instead
    namespace: str | None = None
    context: str | None = None
    kubeconfig: str | None = None
    request_timeout: float = 15.0
    steps: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    dry_run: bool = False
    yes: bool = False
    keep: bool = False
    crash: str = "delete"  # delete | kill
    cross_node: str = "selector"  # selector | cordon
    trainer_version: str | None = None
    signatures: tuple[Path, ...] = ()
    playbook: Path | None = None
    cleanup: bool = False  # `drill --cleanup`: undo what interrupted drills left, nothing else


class Failed(Exception):
    """The step's expectation was not met."""

    def __init__(self, why: str, evidence: list[dict[str, Any]] | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.evidence = evidence or []


class Skip(Exception):
    """The user chose not to run the step (declined its change); shown as skipped. A required step skipped
    keeps the drill from passing (drill/verdict.py)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class NotRun(Exception):
    """The step could not do what it is for: an API refused or failed before its action, a read it depends
    on failed, a wait timed out before its action, what it needs is gone or missing. A required step ends as
    `error` (the drill's verdict names it and the reason); an optional one is skipped with a note."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass
class State:
    """What the steps learn and pass on."""

    api: Any = None  # sources.live.client.Api, None when --dry-run could not reach a cluster
    cluster: Any = None
    version: str | None = None  # v2.0 … v2.3
    version_why: str = ""
    trainer_jobs: set[str] = field(default_factory=lambda: {"node"})
    rjob: str = "node"  # the trainer's replicated job (the override target)
    ckpt_dir: str | None = None
    num_nodes: int = 1
    manifests: ManifestSet | None = None
    to_create: list[tuple[dict[str, Any], str]] = field(default_factory=list)  # (object, file), in create order
    before: dict[str, Any] = field(default_factory=dict)  # what cleanup compares against
    recorded: dict[str, tuple[dict[str, Any], bytes]] = field(default_factory=dict)  # logs of pods it deleted
    floor: int | None = None  # the last complete save the next attempt must resume from (at least)
    resumed_from: int | None = None  # where the current attempt began
    node_pool: list[dict[str, Any]] = field(default_factory=list)  # schedulable nodes that fit the trainer
    allowed: dict[str, bool | str] = field(default_factory=dict)  # "verb resource" -> SSAR answer
    diag: Diagnosis | None = None  # the last diagnosis (for a failure's explanation)
    changed: bool = False  # something was written
    blocked: str | None = None  # the last read a wait depends on failed (why): its timeout is then not a failure
    exec_refused: str | None = None  # why exec into the trainer was refused, once it was
    denied: str | None = None  # permissions the drill needs and the identity lacks (preflight)


class Drill:
    def __init__(
        self,
        opts: Options,
        console: Console,
        playbook: Playbook | None = None,
        stop: threading.Event | None = None,
        interrupts: Interrupts | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.opts = opts
        self.console = console
        self.pb = playbook or load_playbook(opts.playbook)
        self.stop_event = stop or threading.Event()
        self.interrupts = interrupts or NoInterrupts()
        self.clock = clock or Clock()
        if opts.crash not in ("delete", "kill"):
            raise UsageError(f"--crash {opts.crash}: choose delete or kill")
        if opts.cross_node not in ("selector", "cordon"):
            raise UsageError(f"--cross-node {opts.cross_node}: choose selector or cordon")
        if opts.cleanup:
            if opts.submit or opts.steps or opts.skip:
                raise UsageError("--cleanup takes no --submit, --steps or --skip: it only undoes leftovers")
            self.chosen, notes = {self.pb.steps[-1].id}, []
        elif bool(opts.target) == bool(opts.submit):
            raise UsageError("name a TrainJob to attach to ([NAMESPACE/]NAME) or give --submit MANIFEST…, not both")
        else:
            self.chosen, notes = choose_steps(self.pb, opts.steps, opts.skip)
        self.drill_id = marks.new_id()
        self.result = DrillResult(
            self.drill_id,
            self.pb.id,
            None,
            "cleanup" if opts.cleanup else "submit" if opts.submit else "attach",
            opts.dry_run,
            notes=notes,
            options={"crash": opts.crash, "crossNode": opts.cross_node, "keep": opts.keep, "yes": opts.yes,
                     "steps": sorted(self.chosen, key=self.pb.ids.index)},
        )
        self.s = State()
        self.ns = ""
        self.name = ""
        self.actions: Actions | None = None
        self.error: InputError | None = None
        self.internal: str | None = None  # an unexpected exception (a bug, or an answer nothing expected)
        self.stopped: Stopped | None = None
        self.deadline = 0.0
        self._shown: set[int] = set()
        self.cleaning = False

    def asks(self) -> bool:
        """Whether this drill will ask its user anything: a chosen step that changes the cluster, without --yes
        or --dry-run (cleanup never asks; attached, the submit step changes nothing)."""
        if self.opts.yes or self.opts.dry_run or self.opts.cleanup:
            return False
        return any(st.changes and st.id in self.chosen and st.action != "cleanup"
                   and (st.action != "submit" or bool(self.opts.submit)) for st in self.pb.steps)

    # -- the run -----------------------------------------------------------------------------------
    def run(self) -> DrillResult:
        from ckpt_doctor.drill import cleanup, steps

        r = self.result
        r.started_at = now()
        plan = [self.pb.steps[-1]] if self.opts.cleanup else list(self.pb.steps)
        for st in plan:
            r.steps.append(StepResult(st.id, st.title, st.why, st.expect, required=st.required))
        ended = False
        try:
            if self.opts.cleanup:
                steps.connect_cleanup(self)
            else:
                steps.connect(self)
            self.console.begin(r, plan)
            for i, st in enumerate(plan, 1):
                sr = r.step(st.id)
                if st.action == "cleanup":
                    continue
                if ended:
                    sr.status = "not_run"
                    continue
                if st.id not in self.chosen:
                    sr.status = "skipped"
                    sr.observed = "not chosen (--steps / --skip)"
                    continue
                self.run_step(st, sr, i, steps.HANDLERS[st.action])
                ended = sr.status in ("failed", "error") and not self.opts.dry_run  # a plan shows every step
        except Stopped as e:
            self.stopped = e
            r.notes.append(f"stopped by {e.why}")
        except ClusterLost as e:
            r.notes.append(f"lost the cluster: {e}")
        except InputError as e:
            self.error = e
        except InternalError as e:
            self.internal = str(e)
        except Exception as e:  # never a traceback out of a drill: a bug ends as an error, cleanup still runs
            self.internal = _describe(e)
        finally:
            try:
                with self.interrupts.shield():
                    self.cleaning = True
                    last = self.pb.steps[-1]
                    try:
                        self.run_step(last, r.step(last.id), len(plan), cleanup.run_cleanup)
                    except Exception as e:  # run_step re-raises only what is not the cleanup's own error
                        self.internal = self.internal or _describe(e)
                    if self.interrupts.held and self.stopped is None:
                        self.stopped = Stopped(self.interrupts.held[0])
                        r.notes.append(f"{self.interrupts.held[0]} during the cleanup: held until it finished")
                    self._finish()
            except Abandoned as e:
                self.stopped = self.stopped or Stopped(str(e))
                sr = r.step(self.pb.steps[-1].id)
                sr.status = "stopped"
                sr.observed = f"cleanup abandoned by a second {e}; the drill's marks stay for `drill --cleanup`"
                r.leftovers.append("the cleanup did not finish: run `ckpt-doctor drill --cleanup`")
                self._finish()
        return r

    def _finish(self) -> None:
        from ckpt_doctor.drill import verdict

        r = self.result
        r.finished_at = now()
        err = str(self.error) if self.error is not None else None
        if self.internal is not None:
            err = f"internal error: {self.internal}"
        verdict.apply(r, self.stopped.why if self.stopped is not None else None, err)
        try:
            self.console.end(r)
        except Exception as e:  # a console that fails at the end (the app closing) changes nothing decided
            r.notes.append(f"the screen could not show the end: {_describe(e)}")

    def verdict(self) -> str:
        return self.result.verdict

    def exit_code(self) -> int:
        from ckpt_doctor.drill import verdict

        return verdict.exit_code(self.result.verdict, self.stopped.exit_code if self.stopped is not None else None)

    def run_step(
        self, st: Step, sr: StepResult, index: int, handler: Callable[[Drill, Step, StepResult], None]
    ) -> None:
        sr.started_at = now()
        t0 = self.clock.monotonic()
        self.deadline = t0 + st.timeout
        try:
            self.console.step_started(st, index, len(self.pb.steps))
            handler(self, st, sr)
            if sr.status == "not_run":
                sr.status = "planned" if self.opts.dry_run and st.action != "preflight" else "passed"
        except Skip as e:
            sr.status, sr.observed = "skipped", e.why
        except NotRun as e:
            if st.required or self.opts.dry_run:
                sr.status, sr.observed = "error", e.why  # the verdict says "step X could not run: …"
            else:
                sr.status, sr.observed = "skipped", f"could not run: {e.why}"
                sr.notes.append(f"optional step {st.id} could not run: {e.why}")
        except Failed as e:
            sr.status, sr.observed = "failed", e.why
            sr.evidence += e.evidence
            if st.action != "cleanup" and sr.diagnosis is None:
                self.explain(st, sr)
        except Stopped:
            sr.status = "stopped"
            sr.observed = sr.observed or "interrupted while it ran"
            raise
        except ClusterLost as e:
            sr.status, sr.observed = "error", f"lost the cluster: {e}"
            if st.action != "cleanup":
                raise
            self.result.leftovers.append("the cluster stopped answering during cleanup: undo is incomplete")
        except InputError as e:
            sr.status, sr.observed = "error", str(e)
            if st.action != "cleanup":
                raise
        except CallError as e:
            sr.status, sr.observed = "error", f"the cluster refused: {e.kind}: {e.message}"
            if st.action != "cleanup":
                raise InputError(f"step {st.id}: {e.kind}: {e.message}") from None
        except InternalError as e:
            sr.status, sr.observed = "error", f"internal error: {e}"
            raise
        except Exception as e:  # an answer nothing expected, or a bug: the step errs, the drill ends, no traceback
            sr.status, sr.observed = "error", f"internal error: {_describe(e)}"
            if st.action != "cleanup":
                raise InternalError(_describe(e)) from e
        finally:
            sr.finished_at = now()
            sr.seconds = self.clock.monotonic() - t0
            if self.opts.dry_run:  # what the step's plan adds without showing it as a change (reads, placeholders)
                shown = self._shown
                groups: dict[str, list[str]] = {}
                for c in sr.commands:
                    if id(c) not in shown:
                        groups.setdefault(c.does, []).append(c.kubectl)
                for does, lines in groups.items():
                    self.console.show_change(st, does, lines)
            self.console.step_finished(st, sr)

    # -- what steps use ----------------------------------------------------------------------------
    def check_stop(self) -> None:
        if self.stop_event.is_set() and not self.cleaning:  # an abort stops the drill, never its cleanup
            raise Stopped("abort")

    def change(self, st: Step, sr: StepResult, ch: Change, ask: bool = True) -> bool:
        """Show a change; ask (unless --yes or `ask` is False); apply it. False in --dry-run (nothing done)."""
        self.check_stop()
        cmds = [Command(line, ch.does) for line in ch.kubectl]
        sr.commands += cmds
        self._shown.update(id(c) for c in cmds)
        self.console.show_change(st, ch.does, ch.kubectl)
        if self.opts.dry_run:
            return False
        if ask:
            answer = self.console.confirm(st, ch.does)
            if answer == "abort":
                for c in cmds:
                    c.outcome = "declined"
                raise Stopped("abort")
            if answer != "yes":
                for c in cmds:
                    c.outcome = "declined"
                raise Skip(f"declined: {ch.does}")
        self.check_stop()
        try:
            ch.result = ch.apply()
        except CallError as e:
            for c in cmds:
                c.outcome = f"failed: {e.kind}: {e.message}"
            raise
        self.s.changed = True
        for c in cmds:
            c.outcome = "done"
        return True

    def wait(self, st: Step, what: str, check: Callable[[], T | None], until: float | None = None) -> T:
        """Poll `check` until it returns something, with progress; Failed at the step's deadline."""
        start = self.clock.monotonic()
        limit = self.deadline if until is None else min(until, self.deadline)
        self.s.blocked = None
        while True:
            self.check_stop()
            got = check()
            if got is not None:
                return got
            now_t = self.clock.monotonic()
            if now_t >= limit:
                if self.s.blocked is not None:  # what was waited for could not be read: unknown, not failed
                    raise NotRun(f"timed out after {now_t - start:.0f} s {what}: {self.s.blocked}")
                raise Failed(f"timed out after {now_t - start:.0f} s {what}")
            self.console.progress(st, what, now_t - start, max(0.0, limit - start))
            self.clock.sleep(min(self.pb.poll, max(0.0, limit - now_t)))

    def make_actions(self) -> Actions:
        sc = Scope(self.ns, self.name)
        retries = int(self.pb.steps[-1].param("retries", 6))
        backoff = float(self.pb.steps[-1].param("backoffSeconds", 1))
        return Actions(
            self.s.api,
            sc,
            self.drill_id,
            self.result.started_at or now(),
            dry_run=self.opts.dry_run,
            retries=retries,
            backoff=backoff,
            sleep=self.clock.sleep,
            on_retry=self.console.note,
        )

    def explain(self, st: Step, sr: StepResult) -> None:
        """A failed verification: the engine's diagnosis of the TrainJob, its verdict shown."""
        from ckpt_doctor.drill import verify

        diag = self.s.diag
        if diag is None and self.s.api is not None and not self.opts.dry_run and st.action != "preflight":
            try:
                diag = self.diagnose()
            except (InputError, CallError, ClusterLost) as e:
                sr.notes.append(f"the diagnosis could not run: {e}")
                return
        if diag is None:
            return
        sr.diagnosis = verify.diagnosis_summary(diag, st.on_fail)
        self.console.diagnosis(st, verify.summary_lines(sr.diagnosis))

    def diagnose(self) -> Diagnosis:
        """A fresh live diagnosis of the TrainJob (drill/verify.py); InputError when the cluster cannot give one."""
        from ckpt_doctor.drill import verify

        o = self.opts
        diag = verify.diagnose(
            f"{self.ns}/{self.name}",
            None,
            o.context,
            o.kubeconfig,
            o.request_timeout,
            self.s.recorded,
            o.trainer_version,
            o.signatures,
        )
        self.s.diag = diag
        return diag


def _describe(e: BaseException) -> str:
    text = " ".join(str(e).split())[:300]
    return f"{type(e).__name__}: {text}" if text else type(e).__name__

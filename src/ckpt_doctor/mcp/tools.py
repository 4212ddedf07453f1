"""What each MCP tool does, over the same engine and sources as the CLI, without the MCP SDK (so it is tested and
reused on its own). Every function is read-only: it reads the cluster through the user's kubeconfig, or files on
this machine, and writes nothing anywhere.

Every value a tool returns passes through the one redactor (`sources/redact.py`) as it leaves: diagnoses are
redacted by the pipeline (`redact_diagnosis`) as for every CLI output, and `guarded` passes the whole returned
value through the same redactor once more, with what it learned from the objects in scope. Errors become
`ToolFailure` with one redacted line, never a traceback.
"""

from __future__ import annotations

import json
import os
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ckpt_doctor.errors import InputError, InternalError, UsageError

if TYPE_CHECKING:
    from ckpt_doctor.engine.walk import Diagnosis
    from ckpt_doctor.sources.redact import Redactor

T = TypeVar("T")

# one engine call at a time: the program readers share their parsers, and the work is CPU-bound anyway
_ENGINE = threading.Lock()


@dataclass(frozen=True)
class Settings:
    """How the server reaches a cluster (kubectl's flags, given when it starts) and what the engine takes."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    request_timeout: float = 15.0
    concurrency: int = 8
    log_bytes: int | None = None
    trainer_version: str | None = None
    signatures: tuple[Path, ...] = field(default_factory=tuple)


class ToolFailure(Exception):
    """A tool could not answer; the message (one redacted line) says why and what to do."""


def _line(text: str) -> str:
    from ckpt_doctor.sources.redact import redact_text

    # the engine's messages name the CLI's flags; here they are the tools' arguments
    text = text.replace("--trainjob", "the `trainjob` argument").replace("--bundle PATH", "a `bundle` path")
    text = text.replace("pass --kubeconfig or --context", "start `ckpt-doctor mcp` with --kubeconfig or --context")
    return redact_text(" ".join(text.split()))


def guarded(work: Callable[[Redactor], T]) -> T:
    """Run `work` (one engine call at a time) and pass what it returns through the redactor it was given;
    every failure becomes a ToolFailure with one clear line."""
    from ckpt_doctor.sources.redact import Redactor

    red = Redactor()
    try:
        with _ENGINE:
            out = work(red)
    except ToolFailure:
        raise
    except (InputError, UsageError) as e:
        raise ToolFailure(_line(str(e))) from None
    except InternalError as e:
        raise ToolFailure(_line(f"internal error: {e}; please report it")) from None
    except Exception as e:  # a bug: said in one line; the traceback only with CKPT_DOCTOR_DEBUG=1, on stderr
        if os.environ.get("CKPT_DOCTOR_DEBUG"):
            traceback.print_exc()
        raise ToolFailure(_line(f"internal error: {type(e).__name__}: {e}; please report it")) from None
    if isinstance(out, str):
        return red.text(out)  # type: ignore[return-value]
    return red.obj(out)  # type: ignore[no-any-return]


def _target(trainjob: str | None) -> str:
    if not trainjob or not trainjob.strip():
        raise ToolFailure("name the TrainJob: `trainjob` as NAME or NAMESPACE/NAME (or give a `bundle` path)")
    return trainjob.strip()


def _bundle_path(bundle: str) -> Path:
    return Path(os.path.expanduser(bundle.strip()))


def _diagnose(s: Settings, trainjob: str | None, namespace: str | None, bundle: str | None) -> Diagnosis:
    """One TrainJob's diagnosis, redacted as it leaves the pipeline: from a bundle, or live."""
    from ckpt_doctor.pipeline import diagnose_live, diagnose_snapshot

    if bundle:
        from ckpt_doctor.sources.bundle import open_bundle

        with open_bundle(_bundle_path(bundle)) as snap:
            wanted = trainjob.strip() if trainjob else None
            if wanted and namespace and "/" not in wanted:
                wanted = f"{namespace}/{wanted}"
            return diagnose_snapshot(snap, wanted, s.trainer_version, list(s.signatures))
    return diagnose_live(
        _target(trainjob),
        namespace=namespace or s.namespace,
        context=s.context,
        kubeconfig=s.kubeconfig,
        timeout=s.request_timeout,
        workers=s.concurrency,
        log_bytes=s.log_bytes,
        version_flag=s.trainer_version,
        signature_dirs=list(s.signatures),
    )


# -- the tools --------------------------------------------------------------------------------------------------


def list_trainjobs(
    s: Settings,
    namespace: str | None = None,
    all_namespaces: bool = False,
    selector: str | None = None,
    bundle: str | None = None,
) -> dict[str, Any]:
    """The fleet scan (`diagnose -A | -n NS | -l SEL`, or `--bundle B --all`): one row per TrainJob, ranked by its
    worst finding and the steps it lost."""
    from ckpt_doctor.fleet.render import to_json
    from ckpt_doctor.fleet.scan import Diagnoser, scan_bundle, scan_cluster

    if all_namespaces and namespace:
        raise ToolFailure("give either `namespace` or `all_namespaces`, not both")

    def work(red: Redactor) -> dict[str, Any]:
        diagnoser = Diagnoser(s.trainer_version, list(s.signatures))
        if bundle:
            if all_namespaces or selector:
                raise ToolFailure("`all_namespaces` and `selector` read a live cluster; a bundle is listed whole")
            from ckpt_doctor.sources.bundle import open_bundle

            path = _bundle_path(bundle)
            with open_bundle(path) as snap:
                result = scan_bundle(snap, diagnoser, str(path))
        else:
            result = scan_cluster(
                diagnoser,
                namespace=namespace or s.namespace,
                all_namespaces=all_namespaces,
                selector=selector,
                context=s.context,
                kubeconfig=s.kubeconfig,
                timeout=s.request_timeout,
                concurrency=s.concurrency,
                log_bytes=s.log_bytes,
            )
        doc = to_json(result)
        doc.pop("diagnoses", None)  # rows only: diagnose_trainjob gives one TrainJob's findings
        return doc

    return guarded(work)


def diagnose_trainjob(
    s: Settings, trainjob: str | None = None, namespace: str | None = None, bundle: str | None = None
) -> dict[str, Any]:
    """One TrainJob's findings document (docs/contracts.md §3, as `diagnose -o json` prints it) and a short verdict."""
    from ckpt_doctor.report.jsonout import render
    from ckpt_doctor.report.verdict import verdict_text
    from ckpt_doctor.sources.redact import redact_diagnosis

    def work(red: Redactor) -> dict[str, Any]:
        diag = redact_diagnosis(_diagnose(s, trainjob, namespace, bundle), red)
        return {"verdict": verdict_text(diag), "findings": json.loads(render(diag))}

    return guarded(work)


def incident_report(
    s: Settings, trainjob: str | None = None, namespace: str | None = None, bundle: str | None = None
) -> str:
    """The post-incident report (`report -o markdown`) as Markdown text; nothing is written to disk."""
    from ckpt_doctor.report.incident import render_report
    from ckpt_doctor.sources.redact import redact_diagnosis

    def work(red: Redactor) -> str:
        diag = redact_diagnosis(_diagnose(s, trainjob, namespace, bundle), red)
        return render_report(diag, "markdown", None, red).text

    return guarded(work)


def explain_apply_error(s: Settings, error_text: str) -> dict[str, Any]:
    """`explain-error -o json`: the rules an apply-time error matches, their cause and fix."""
    from ckpt_doctor.explain import explain
    from ckpt_doctor.sources.redact import redact_diagnosis

    if not error_text or not error_text.strip():
        raise ToolFailure("the error text is empty: pass what kubectl printed when it refused the object")

    def work(red: Redactor) -> dict[str, Any]:
        ex = explain(error_text)
        redact_diagnosis(ex.diagnosis, red)  # the error text may quote a token
        return ex.to_json()

    return guarded(work)


def lint_manifests(
    s: Settings,
    paths: list[str] | None = None,
    manifest_yaml: str | None = None,
    trainer_version: str | None = None,
) -> dict[str, Any]:
    """`lint -o json` over files/folders on this machine and/or manifests given inline, plus the notes about
    what was skipped. Never rewrites a file (no --fix here)."""
    from ckpt_doctor.report.jsonout import render
    from ckpt_doctor.sources.redact import redact_diagnosis

    items = [os.path.expanduser(p) for p in (paths or []) if p and p.strip()]
    if any(p.strip() == "-" for p in items):
        raise ToolFailure("`-` (standard input) is the MCP channel here: pass the manifests as `manifest_yaml`")
    inline = manifest_yaml if manifest_yaml and manifest_yaml.strip() else None
    if not items and inline is None:
        raise ToolFailure("give `paths` (manifest files or folders) or `manifest_yaml` (the manifests as text)")
    version = trainer_version or s.trainer_version
    if version:
        from ckpt_doctor.facts.versions import KNOWN, normalise

        if normalise(version) is None:
            raise ToolFailure(f"unknown Trainer version {version!r} (known: {', '.join(KNOWN)})")

    def work(red: Redactor) -> dict[str, Any]:
        from ckpt_doctor.lint import lint_paths

        result = lint_paths([*items, *(["-"] if inline is not None else [])], version, stdin_text=inline)
        notes = [f"{n.where()}: {n.message}" for n in result.manifests.notes]
        if not result.manifests.files:
            why = "; ".join(notes) or "no .yaml, .yml or .json file there"
            raise InputError(f"nothing given could be read as a Kubernetes manifest ({why})")
        for mf in result.manifests.files:  # a quoted line may repeat a credential an object holds by name
            for obj in mf.objects:
                red.learn(obj.raw)
        doc = json.loads(render(redact_diagnosis(result.diagnosis, red)))
        doc["skipped"] = notes
        return doc

    return guarded(work)


def list_rules() -> dict[str, Any]:
    """Every rule of the catalogue in one line each: id, kind, severity, title."""

    def work(red: Redactor) -> dict[str, Any]:
        return {"rules": [{k: r[k] for k in ("id", "kind", "severity", "title")} for r in _catalogue()["rules"]]}

    return guarded(work)


def show_rule(rule_id: str) -> dict[str, Any]:
    """Everything about one rule (`rules show ID -o json`), with the causes that can explain it."""

    def work(red: Redactor) -> dict[str, Any]:
        index = _catalogue()
        wanted = (rule_id or "").strip()
        rule = next((r for r in index["rules"] if r["id"] == wanted), None)
        if rule is None:
            ids = ", ".join(r["id"] for r in index["rules"])
            raise ToolFailure(f"no rule {wanted!r}; the rules are: {ids}")
        return {**rule, "explainedBy": list(index.get("explaining", {}).get(wanted, []))}

    return guarded(work)


def _catalogue() -> dict[str, Any]:
    """rules/index.json (the catalogue and which causes explain each symptom), or the catalogue itself."""
    from ckpt_doctor.data import rules_dir
    from ckpt_doctor.engine.catalogue import default_digest

    try:
        index: dict[str, Any] = json.loads((rules_dir() / "index.json").read_text())
    except (OSError, ValueError):
        index = {}
    if index.get("digest") == default_digest():
        return index
    from ckpt_doctor.engine.catalogue import default_rules
    from ckpt_doctor.engine.checks import load_checks
    from ckpt_doctor.engine.graph import build_graph, explaining_table

    rules = default_rules()
    return {
        "rules": [r.to_json() for r in rules],
        "explaining": explaining_table(build_graph(rules, load_checks())),
    }

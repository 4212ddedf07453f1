"""`ckpt-doctor mcp`: the Model Context Protocol server (stdio), on the official Python SDK's 2.x `MCPServer`.

The tools are thin: each calls one function of `ckpt_doctor.mcp.tools` (the engine, the sources, the one
redactor) and turns its `ToolFailure` into the SDK's `ToolError`, so the assistant reads one clear line and
never a traceback. Every tool is annotated read-only (`readOnlyHint`), non-destructive and idempotent: nothing
here writes to a cluster or a file, and the drill (the only face that changes a cluster) is not exposed.

The SDK is imported here only, and this module only when the `mcp` verb runs (`--help` and the other verbs
never pay for it).
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from ckpt_doctor import __version__
from ckpt_doctor.mcp import prompts, tools
from ckpt_doctor.mcp.tools import Settings, ToolFailure

INSTRUCTIONS = """\
ckpt-doctor answers one question about Kubeflow Trainer v2 TrainJobs: did a TrainJob resume from its \
checkpoint after a restart, suspension or preemption, and if not, why. Its tools read, never write: the \
cluster through the user's kubeconfig (read-only requests: get, list, logs), evidence bundles and manifest \
files on this machine. They cannot change anything, and they do not run the drill (interrupting a TrainJob to \
prove it resumes): suggest `ckpt-doctor drill NAMESPACE/NAME` for the user to run, after they agree.

How to read the results:
- Each finding is a rule with a status. `fail` is backed by evidence (quoted objects, events, log lines); cite \
it, with the rule id, and give the fix the finding carries.
- `not_evaluated` means the evidence was missing, forbidden or unreadable (the `reason` says which). It is NOT \
a pass. Never tell the user that nothing is wrong while rules are not evaluated: say what could not be checked \
and how to get it (RBAC to read pods, events or logs; logs of earlier attempts; a bundle).
- A `pass` holds only on positive evidence of the healthy state. Only checkpoint/resume problems are judged: \
general pod, node or network health is outside these tools.
- Values shown as `<redacted:KIND>` are credentials removed on purpose. Do not ask the user for them.
- `lint_manifests` judges manifests before they are applied: symptoms need cluster evidence and are always \
not_evaluated there. A clean lint means the manifests show no known cause, not that a resume was proven.
- Logs are read as head and tail windows; a line outside them is unknown, not absent.
"""

READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True}


def _annotations(title: str, cluster: bool) -> ToolAnnotations:
    return ToolAnnotations(title=title, openWorldHint=cluster, **READ_ONLY)


TrainJob = Annotated[
    str | None,
    Field(description="the TrainJob as NAME or NAMESPACE/NAME (in a bundle with one TrainJob it may be left out)"),
]
Namespace = Annotated[
    str | None, Field(description="its namespace, when `trainjob` is a bare NAME (default: the kubeconfig's)")
]
Bundle = Annotated[
    str | None,
    Field(description="path of an evidence bundle on this machine (a folder or .tar.gz) instead of the cluster"),
]


def build_server(settings: Settings) -> MCPServer:
    """The server with its tools and prompts, over `settings` (the cluster flags given to `ckpt-doctor mcp`)."""
    server = MCPServer(
        "ckpt-doctor",
        title="ckpt-doctor: why a TrainJob did not resume from its checkpoint",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )

    def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolFailure as e:
            raise ToolError(str(e)) from None

    @server.tool(annotations=_annotations("List TrainJobs", cluster=True))
    def list_trainjobs(
        namespace: Annotated[str | None, Field(description="one namespace (default: the kubeconfig's)")] = None,
        all_namespaces: Annotated[bool, Field(description="every namespace the user may read")] = False,
        selector: Annotated[str | None, Field(description="a label selector, as kubectl -l")] = None,
        bundle: Bundle = None,
    ) -> dict[str, Any]:
        """List TrainJobs with their state, attempts, steps lost to restarts, resume status and worst failing
        finding (rule id and severity), ranked worst first. Each is fully diagnosed to rank it; call
        diagnose_trainjob for one TrainJob's evidence."""
        return call(tools.list_trainjobs, settings, namespace, all_namespaces, selector, bundle)  # type: ignore[no-any-return]

    @server.tool(annotations=_annotations("Diagnose a TrainJob", cluster=True))
    def diagnose_trainjob(
        trainjob: TrainJob = None, namespace: Namespace = None, bundle: Bundle = None
    ) -> dict[str, Any]:
        """Diagnose one TrainJob (live, or from a bundle): `verdict` is a short text (each failing symptom, the
        cause that explains it, the fix, and what could not be evaluated); `findings` is the full findings
        document (every rule with status fail, pass or not_evaluated, its evidence and fix)."""
        return call(tools.diagnose_trainjob, settings, trainjob, namespace, bundle)  # type: ignore[no-any-return]

    @server.tool(annotations=_annotations("Explain an apply error", cluster=False))
    def explain_apply_error(
        error_text: Annotated[str, Field(description="the error kubectl printed when it refused the object")],
    ) -> dict[str, Any]:
        """Match an apply-time error (e.g. a Trainer webhook denial) to its rule, cause and fix. `recognised`
        says whether it was; when not, lint the manifest instead."""
        return call(tools.explain_apply_error, settings, error_text)  # type: ignore[no-any-return]

    @server.tool(annotations=_annotations("Lint manifests", cluster=False))
    def lint_manifests(
        paths: Annotated[
            list[str] | None, Field(description="manifest files or folders on this machine (read, never rewritten)")
        ] = None,
        manifest_yaml: Annotated[
            str | None, Field(description="manifests as YAML text (one or many documents)")
        ] = None,
        trainer_version: Annotated[
            str | None, Field(description="the cluster's Trainer version (v2.0 … v2.3) if the files do not show it")
        ] = None,
    ) -> dict[str, Any]:
        """Check TrainJob, TrainingRuntime, ClusterTrainingRuntime, PVC, StorageClass and ConfigMap manifests before
        they are applied, for every cause of a failed resume that manifests can show. Symptoms need cluster evidence
        and are not_evaluated here. `skipped` lists files that were not manifests."""
        return call(tools.lint_manifests, settings, paths, manifest_yaml, trainer_version)  # type: ignore[no-any-return]

    @server.tool(annotations=_annotations("Post-incident report", cluster=True))
    def incident_report(trainjob: TrainJob = None, namespace: Namespace = None, bundle: Bundle = None) -> str:
        """The post-incident report of one TrainJob as Markdown: summary, steps and GPU-hours lost, the attempts
        timeline, the root cause with its evidence, the fixes, what could not be checked, and the kubectl commands
        that show the evidence again. Nothing is written to disk."""
        return call(tools.incident_report, settings, trainjob, namespace, bundle)  # type: ignore[no-any-return]

    @server.tool(annotations=_annotations("List rules", cluster=False))
    def list_rules() -> dict[str, Any]:
        """The rule catalogue: each rule's id, kind (symptom or cause), severity and title."""
        return call(tools.list_rules)  # type: ignore[no-any-return]

    @server.tool(annotations=_annotations("Show a rule", cluster=False))
    def show_rule(
        rule_id: Annotated[str, Field(description="a rule id, e.g. fresh-start-after-restart")],
    ) -> dict[str, Any]:
        """Everything about one rule: what it means, its fix, its documentation, the symptoms it explains (a cause)
        or the causes that explain it (a symptom), what it needs to be evaluated."""
        return call(tools.show_rule, rule_id)  # type: ignore[no-any-return]

    prompts.register(server)
    return server


def serve(settings: Settings) -> None:
    """Serve on stdin/stdout until the client closes the stream."""
    build_server(settings).run("stdio")

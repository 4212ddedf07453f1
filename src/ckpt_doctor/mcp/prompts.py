"""The MCP server's prompts: the questions on-call engineers ask, each turned into a plan over the tools."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.server import MCPServer


def _where(trainjob: str, namespace: str | None, bundle: str | None) -> str:
    args = [f"trainjob={trainjob!r}"]
    if namespace:
        args.append(f"namespace={namespace!r}")
    if bundle:
        args.append(f"bundle={bundle!r}")
    return ", ".join(args)


def why_fresh_start(trainjob: str, namespace: str | None = None, bundle: str | None = None) -> str:
    return (
        f"My TrainJob {trainjob} started training from step 0 (or from an older checkpoint) after it restarted. "
        f"Why?\n\nCall diagnose_trainjob({_where(trainjob, namespace, bundle)}). Start from its `verdict`. Look at "
        "the findings fresh-start-after-restart and resumed-older-checkpoint: when one fails, name the cause that "
        "explains it (its rule id), quote the evidence it cites (the log line, event or field), and give its fix. "
        "When they are not_evaluated, do not conclude that the job resumed: say which evidence was missing (the "
        "`reason`) and how to get it. Mention any other failing cause as a risk for the next restart."
    )


def is_runtime_resumable(runtime: str) -> str:
    as_path = "\n" not in runtime and not runtime.lstrip().startswith(("apiVersion", "kind", "---", "{"))
    call = f"lint_manifests(paths=[{runtime!r}])" if as_path else "lint_manifests(manifest_yaml=<the YAML below>)"
    tail = "" if as_path else f"\n\n```yaml\n{runtime}\n```"
    return (
        "Is this training runtime set up so that a TrainJob using it resumes from its checkpoint after a restart, "
        f"a suspension or a preemption?\n\nCall {call}. Go through the causes it judges: where checkpoints are "
        "written (persistent volume or not), whether the ancestor label lets spec.trainer overrides through, the "
        "failurePolicy that restarts the job, the grace period and SIGTERM handling for a final save, what is "
        "saved and how the newest checkpoint is found. For each failing one give the fix. Symptoms are "
        "not_evaluated in a lint (they need a running job): say that a clean lint is not proof, and suggest "
        "`ckpt-doctor drill` on a test TrainJob for that." + tail
    )


def write_postmortem(trainjob: str, namespace: str | None = None, bundle: str | None = None) -> str:
    return (
        f"Write the postmortem of TrainJob {trainjob}.\n\nCall incident_report({_where(trainjob, namespace, bundle)}) "
        "and start from its Markdown: keep its figures (steps and GPU-hours lost, the timeline), its root cause "
        "and evidence, and its section on what could not be checked. Add what the team should change, in order of "
        "impact, from the fixes it lists. Do not invent figures the report does not give, and keep "
        "<redacted:…> values as they are."
    )


def register(server: MCPServer) -> None:
    server.prompt(
        name="why_fresh_start",
        title="Why did this TrainJob start from step 0?",
        description="Diagnose a TrainJob that restarted from step 0 or from an older checkpoint.",
    )(why_fresh_start)
    server.prompt(
        name="is_runtime_resumable",
        title="Is this runtime resumable?",
        description="Lint a TrainingRuntime / ClusterTrainingRuntime (a file path, or the YAML itself) for resume.",
    )(is_runtime_resumable)
    server.prompt(
        name="write_postmortem",
        title="Write the postmortem",
        description="The post-incident report of a TrainJob, as a starting point for the write-up.",
    )(write_postmortem)

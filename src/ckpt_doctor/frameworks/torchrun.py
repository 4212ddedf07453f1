"""torchrun (torch.distributed.elastic): the launcher, and its agent's log lines.

It names no stack of its own: the program it starts does. Its agent restarts all local workers
on a failure (`--max-restarts`), a restart layer inside the pod (knowledge: guide-and-frameworks.md
§4.6); the program must load a checkpoint on start.
"""

from ckpt_doctor.frameworks.spec import Failure, Framework, Launch, Logs, Tool

FRAMEWORK = Framework(
    name="torchrun",
    title="torchrun",
    order=200,
    summary="torch.distributed.run, the elastic launcher",
    stack=False,
    launch=Launch(
        tools=(
            Tool(
                "torchrun",
                role="launcher",
                flags=frozenset({"--standalone", "--no-python", "--no_python", "--run-path", "--run_path"}),
            ),
        ),
        python_launchers=("torch.distributed.run", "torch.distributed.launch"),
    ),
    logs=Logs(files=("torchrun.yaml",), names=("torchrun",), shows_stack=False),
    failures=(
        Failure(
            "Worker group FAILED. {k}/{N} attempts left; will restart worker group",
            "the agent restarts every local worker",
            "te-worker-group-restart",
        ),
        Failure(
            "Received Signals.SIGTERM death signal, shutting down workers",
            "the pod was asked to stop; the workers get SIGTERM",
            "te-death-signal",
        ),
    ),
)

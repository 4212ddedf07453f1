"""A hand-written training loop: the program's own `torch.save`/`torch.load` (the Python reader's
generic save/load and discovery readers), and the Kubeflow guide's `[checkpoint] ...` convention.

A program whose own code saves and loads state, with no framework's trainer in sight, is this
stack. Its checkpoints are whatever it names them; the guide's scripts write `checkpoint-{N}`.
Its log lines: the guide's `[checkpoint]` lines, and hand-rolled phrasings tried only on lines no
framework signature matched (knowledge: guide-and-frameworks.md §4.1, §4.6).
"""

from ckpt_doctor.frameworks.spec import CheckpointName, Framework, Layout, Logs, Marker, Pick

FRAMEWORK = Framework(
    name="hand-rolled",
    title="a hand-written training loop",
    order=100,
    summary="the program's own save and load code",
    logs=Logs(
        files=("checkpoint-convention.yaml", "hand-rolled.yaml"),
        names=("checkpoint-convention", "hand-rolled"),
        shows_stack=False,
    ),
    layout=Layout(
        names=(
            CheckpointName("checkpoint-{step}", "dir", note="the guide's runtime scripts"),
            CheckpointName("step_{step}.pt", "file"),
            CheckpointName("*{step}*", "dir", note="whatever the program names: its discovery decides"),
        ),
        markers=(
            Marker("COMPLETED", "complete", "inside", written_last=True, note="e.g. open-instruct", always=False),
        ),
        atomic="no",
    ),
    pick=Pick("program", False, "the program's own code picks the checkpoint", rank=120),
)

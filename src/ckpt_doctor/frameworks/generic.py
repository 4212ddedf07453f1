"""Lines any program prints: Python errors, out-of-memory and disk-full messages, and tqdm bars.

Not a stack: `framework: generic` signatures are tried after every framework's own, and before
hand-rolled phrasings. A step in a checkpoint path named `step=N`, `step_N` or `stepN` is read
by the convention most loops and Lightning share.
"""

from ckpt_doctor.frameworks.spec import Failure, Framework, Logs

FRAMEWORK = Framework(
    name="generic",
    title="generic log lines",
    order=210,
    stack=False,
    logs=Logs(
        files=("generic.yaml", "tqdm.yaml"),
        names=("generic",),
        shows_stack=False,
        path_steps=(r"(?<![a-z])step[=_-]?",),
    ),
    failures=(
        Failure("No space left on device", "the volume is full: a save failed or will fail"),
        Failure("CUDA out of memory", "the process ran out of accelerator memory"),
    ),
)

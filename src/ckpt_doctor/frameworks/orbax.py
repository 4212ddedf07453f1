"""Orbax (JAX): `CheckpointManager` steps.

Each step is `{dir}/{step}/` (or `{prefix}_{step}`) with items as subdirectories and
`_CHECKPOINT_METADATA`; a save is written under `{step}.orbax-checkpoint-tmp-{ts}` and renamed when
finished (on GCS: `commit_success.txt`), so a leftover temporary name is an interrupted save.
Nothing of a program is read as Orbax yet: no import or log line identifies it (its runs print
nothing when they save: recordings orbax-0.12-*); a traceback through `CheckpointManager.restore` is
a crash while loading (knowledge: platform-signals-and-layouts.md §3).
"""

from ckpt_doctor.frameworks.spec import CheckpointName, Framework, Layout, Logs, Marker, Pick

FRAMEWORK = Framework(
    name="orbax",
    title="Orbax (JAX)",
    order=110,
    summary="orbax.checkpoint's CheckpointManager",
    logs=Logs(load_frames=(r"/orbax/checkpoint/(?:_src/)?(?:checkpoint_manager|checkpointer)\.py:restore$",)),
    layout=Layout(
        names=(
            CheckpointName("{step}", "dir"),
            CheckpointName("*_{step}", "dir", note="step_prefix"),
        ),
        markers=(
            # `{step}.orbax-checkpoint-tmp-{ts}` upstream, `30.orbax-checkpoint-tmp` in orbax 0.12's recording
            Marker("{name}.orbax-checkpoint-tmp*", "incomplete", "name", note="a save not yet renamed"),
            Marker("_CHECKPOINT_METADATA", "complete", "inside", written_last=True),
            Marker("commit_success.txt", "complete", "inside", written_last=True, note="GCS only", always=False),
        ),
        atomic="rename",
    ),
    pick=Pick(
        "highest-step",
        True,
        "Orbax's CheckpointManager picks the newest finalized step",
        "orbax.checkpoint.CheckpointManager.latest_step",
        rank=110,
    ),
)

"""torch.distributed.checkpoint (DCP): `dcp.save` / `dcp.load` with `checkpoint_id=<dir>`.

A checkpoint directory holds per-rank `__{rank}_{i}.distcp` files and `.metadata`, which
`_FileSystemWriter.finish()` writes last (temporary name, fsync, rename): a directory without
`.metadata` is incomplete; a loop that checks for it skips a half-written newest save
(knowledge: platform-signals-and-layouts.md §3). Launched by torchrun (see torchrun.py).
"""

from ckpt_doctor.frameworks.spec import CheckpointName, Failure, Framework, Launch, Layout, Logs, Marker, Pick

FRAMEWORK = Framework(
    name="torch-dcp",
    title="torch.distributed.checkpoint",
    order=90,
    summary="torch.distributed.checkpoint in the program's own loop",
    launch=Launch(imports=("torch.distributed.checkpoint",)),
    logs=Logs(files=("torch-dcp.yaml",), names=("torch-dcp",)),
    layout=Layout(
        names=(CheckpointName("*", "dir", note="the program names the directory (checkpoint_id)"),),
        files=("__{rank}_{n}.distcp",),
        markers=(
            Marker(
                ".metadata",
                "complete",
                "inside",
                written_last=True,
                note="written last by the coordinator; deleted first when a save overwrites",
            ),
            Marker("__{rank}.metadata", "complete", "inside", written_last=True, note="no-collectives mode"),
        ),
        atomic="marker",
    ),
    pick=Pick(
        "program",
        True,
        "dcp.load reads the directory the program names, whole or not at all",
        "torch.distributed.checkpoint.load",
        rank=95,
    ),
    failures=(
        Failure(
            "CheckpointException ... metadata is None",
            "the directory has no .metadata: a save that died",
            "dcp-checkpoint-exception",
        ),
    ),
    library=True,
)

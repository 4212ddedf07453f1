"""training_hub (Red Hat AI Innovation) and its SFT backend instructlab.training.

`checkpoint_at_epoch` saves HF-format weights only (`hf_format/samples_N`, not resumable);
`accelerate_full_state_at_epoch: true` saves `full_state/..._N` with `training_metadata.json`, and
`main_ds.py` always loads the entry with the highest number after the last `_`
(knowledge: guide-and-frameworks.md §4.5).
"""

from ckpt_doctor.frameworks.spec import CheckpointName, Failure, Framework, Launch, Layout, Logs, Marker, Pick

FRAMEWORK = Framework(
    name="training-hub",
    title="training_hub",
    order=20,
    summary="training_hub.sft and instructlab.training",
    launch=Launch(
        modules=("instructlab.training.main_ds", "training_hub"),
        imports=("training_hub", "instructlab.training"),
        python_calls=("sft",),
    ),
    logs=Logs(files=("training-hub.yaml",), names=("training-hub",)),
    layout=Layout(
        names=(
            CheckpointName("full_state/*_{n}", "dir", note="accelerate save_state; n counts samples or epochs"),
            CheckpointName("hf_format/samples_{n}", "dir", note="weights only: not resumable"),
        ),
        files=("training_metadata.json",),
        markers=(
            Marker(
                "training_metadata.json", "complete", "inside", note="current_epoch and samples_seen of the saved state"
            ),
        ),
        atomic="no",
    ),
    pick=Pick(
        "highest-step",
        False,
        "training_hub picks the full_state entry with the highest number",
        "instructlab.training.utils.load_latest_full_state",
        rank=40,
    ),
    failures=(
        Failure(
            "No checkpoints to load from: {dir}", "full_state/ exists but is empty: a fresh start", "th-no-checkpoints"
        ),
    ),
    saves_by_default=True,
)

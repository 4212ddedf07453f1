"""What realruns records: every run (framework, version, scenario), its faults per attempt, and the causes
a correct diagnosis names. The symptoms of the verdict are derived from the ground truth (record.py);
the causes are the scenario's (they are what the script or manifest got wrong).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Fault:
    """What ends one attempt. kind: "" (runs to its end), kill (SIGKILL of the whole container),
    kill-rank (SIGKILL of one rank), term (SIGTERM to PID 1, SIGKILL after `grace` seconds)."""

    kind: str = ""
    at_step: int | None = None
    during_save: int | None = None  # SIGKILL once the save of this step has written a file
    during_final_save: bool = False
    rank: int | None = None
    grace: float = 30.0
    slow_save: float = 0.0  # seconds per file written while a save is in progress (slow storage)

    def target(self) -> str:
        return f"rank {self.rank}" if self.kind == "kill-rank" else "container"

    def describe(self) -> str:
        if self.during_save is not None:
            return f"during the save of step {self.during_save}"
        return f"at step {self.at_step}" if self.at_step is not None else ""


NONE = Fault()


@dataclass
class Run:
    id: str
    framework: str  # the engine's framework name
    venv: str
    packages: tuple[str, ...]
    scenario: str
    description: str
    script: str  # realruns/scripts/<script>, mounted at /workspace/train.py
    command: list[str]
    faults: list[Fault]
    env: dict[str, str] = field(default_factory=dict)
    checkpoint_dir: str = "/mnt/checkpoints/run"
    workdir: str = "/workspace"
    ranks: int = 1
    grace: int = 30
    step_delay: float = 0.1
    causes_fail: tuple[str, ...] = ()
    causes_pass: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    variant: str = ""

    @property
    def trainjob(self) -> str:
        return "rr-" + self.id.replace(".", "")[:44].rstrip("-")

    @property
    def verdict_fail(self) -> tuple[str, ...]:
        return self.causes_fail

    @property
    def verdict_pass(self) -> tuple[str, ...]:
        return self.causes_pass


UNBUF = {"PYTHONUNBUFFERED": "1"}
CKPT = {"CKPT_DIR": "/mnt/checkpoints/run"}


def hf_runs(ver: str, venv: str) -> list[Run]:
    pk = ("torch", "transformers", "accelerate", "safetensors")
    cmd = ["python", "/workspace/train.py"]
    p = f"hf-{ver}"

    def run(scenario: str, script: str, faults: list[Fault], desc: str, env: dict[str, str] | None = None,
            variant: str = "", **kw: object) -> Run:  # fmt: skip
        rid = f"{p}-{scenario}" + (f"-{variant}" if variant else "")
        return Run(rid, "hf-trainer", venv, pk, scenario, desc, script, cmd, faults,
                   env={**CKPT, **(UNBUF if env is None else env)}, variant=variant, **kw)  # type: ignore[arg-type]

    kill25 = Fault("kill", at_step=25)
    return [
        run("correct-resume", "hf_train.py", [kill25, NONE],
            "SIGKILL of the container at step 25; the restart resumes from checkpoint-20 (get_last_checkpoint)"),
        run("correct-resume", "hf_train.py", [kill25, NONE],
            "as correct-resume, with PYTHONUNBUFFERED unset (the image does not set it)", env={}, variant="buffered"),
        run("fresh-start", "hf_train_noresume.py", [kill25, NONE],
            "the script never passes a checkpoint to train(): the restart trains from step 0 and overwrites "
            "checkpoint-10, -20"),
        run("partial-save", "hf_train.py", [Fault("kill", during_save=30, slow_save=1.0), NONE, NONE],
            "SIGKILL while checkpoint-30 is being written (slow storage); every restart picks the half-written "
            "checkpoint-30"),
        run("sigterm-handler", "hf_train_sigterm.py", [Fault("term", at_step=25, grace=30), NONE],
            "SIGTERM at step 25 (suspend); a callback saves at the end of the step and stops; the restart resumes "
            "from that save"),
        run("sigterm-no-handler", "hf_train.py", [Fault("term", at_step=25, grace=5), NONE],
            "SIGTERM at step 25 to a trainer without a handler (PID 1 ignores it); SIGKILL after the 5 s grace; "
            "the restart resumes from the last periodic save", grace=5),
        run("slow-save-grace", "hf_train_sigterm.py",
            [Fault("term", at_step=25, grace=4, slow_save=2.0), NONE],
            "SIGTERM at step 25; the handler's save is slower than the 4 s grace, so SIGKILL lands inside it",
            grace=4),
        run("lexical-sort", "hf_train_lexical.py", [Fault("kill", at_step=105), NONE],
            "the newest checkpoint is picked by sorting names as text: checkpoint-90 sorts after checkpoint-100",
            env={**UNBUF, "MAX_STEPS": "110"}, causes_fail=("lexical-checkpoint-sort",)),
        run("dir-changes", "hf_train_rundir.py", [kill25, NONE],
            "the output directory is named after the start time: the restart looks in a new, empty one",
            causes_fail=("ckpt-dir-changed",)),
    ]


def common_runs(prefix: str, framework: str, venv: str, packages: tuple[str, ...], base: str, command: list[str],
                kill_rank: bool = False, ranks: int = 1, only: tuple[str, ...] = ()) -> list[Run]:  # fmt: skip
    """The scenarios every framework gets, with its own scripts (base.py, base_noresume.py, base_lexical.py,
    base_rundir.py, base_sigterm.py)."""

    def run(scenario: str, script: str, faults: list[Fault], desc: str, env: dict[str, str] | None = None,
            variant: str = "", **kw: object) -> Run:  # fmt: skip
        rid = f"{prefix}-{scenario}" + (f"-{variant}" if variant else "")
        return Run(rid, framework, venv, packages, scenario, desc, f"{base}{script}.py", command, faults,
                   env={**CKPT, **(UNBUF if env is None else env)}, variant=variant, ranks=ranks,
                   **kw)  # type: ignore[arg-type]  # fmt: skip

    kill25 = Fault("kill-rank", at_step=25, rank=1) if kill_rank else Fault("kill", at_step=25)
    what = "SIGKILL of rank 1" if kill_rank else "SIGKILL of the container"
    runs = [
        run("correct-resume", "", [kill25, NONE], f"{what} at step 25; the restart resumes from step 20"),
        run("correct-resume", "", [kill25, NONE], "as correct-resume, with PYTHONUNBUFFERED unset", env={},
            variant="buffered"),
        run("fresh-start", "_noresume", [kill25, NONE], "the script never loads a checkpoint: the restart trains "
            "from step 0 and overwrites the older saves"),
        run("partial-save", "", [Fault("kill", during_save=30, slow_save=1.0), NONE],
            "SIGKILL while the step-30 checkpoint is being written (slow storage), then a restart"),
        run("sigterm-handler", "_sigterm", [Fault("term", at_step=25, grace=30), NONE],
            "SIGTERM at step 25 (suspend); the script saves and stops; the restart resumes from that save"),
        run("sigterm-no-handler", "", [Fault("term", at_step=25, grace=5), NONE],
            "SIGTERM at step 25 to the script without a save handler; SIGKILL after the 5 s grace", grace=5),
        run("slow-save-grace", "_sigterm", [Fault("term", at_step=25, grace=4, slow_save=2.0), NONE],
            "SIGTERM at step 25; the save it starts is slower than the 4 s grace: SIGKILL lands inside it", grace=4),
        run("lexical-sort", "_lexical", [Fault("kill", at_step=105), NONE],
            "the newest checkpoint is picked by sorting names as text (step 90 sorts after step 100)",
            env={**UNBUF, "MAX_STEPS": "110"}, causes_fail=("lexical-checkpoint-sort",), step_delay=0.05),
        run("dir-changes", "_rundir", [kill25, NONE],
            "the checkpoint directory is named after the start time: the restart looks in a new, empty one",
            causes_fail=("ckpt-dir-changed",)),
    ]
    return [r for r in runs if not only or r.id.removeprefix(prefix + "-") in only]


def loop_variants() -> list[Run]:
    """DCP loops written two other common ways (issue 19 §4): one that picks the highest `step_{N:06d}` without
    checking the save finished and says `resuming from … (global_step N, …)` before loading it through its own
    load_checkpoint; one that logs JSON records (numbers in fields) and draws a tqdm bar per epoch."""
    pk = ("torch", "tqdm")

    def run(scenario: str, variant: str, script: str, faults: list[Fault], desc: str,
            env: dict[str, str] | None = None) -> Run:  # fmt: skip
        return Run(f"dcp-1rank-{scenario}-{variant}", "torch-dcp", "hf5", pk, scenario, desc, script, TORCHRUN1,
                   faults, env={**CKPT, **UNBUF, **(env or {})}, variant=variant)  # fmt: skip

    kill25 = Fault("kill", at_step=25)
    return [
        run("correct-resume", "naive", "dcp_train_naive.py", [kill25, NONE],
            "SIGKILL at step 25; the restart picks step_000020 by its number and says so before loading it"),
        run("partial-save", "naive", "dcp_train_naive.py", [Fault("kill", during_save=30, slow_save=1.0), NONE],
            "SIGKILL while step_000030 is being written (slow storage); the restart picks it by its number, "
            "without checking for .metadata, and crashes inside dcp.load"),
        run("correct-resume", "jsonlog", "dcp_train_jsonlog.py", [kill25, NONE],
            "SIGKILL at step 25; the restart resumes from step-20; every log line is a JSON record"),
        run("fresh-start", "jsonlog", "dcp_train_jsonlog.py", [kill25, NONE],
            "the script is told not to resume (RESUME=0): the restart trains from step 0; JSON records",
            env={"RESUME": "0"}),
    ]


# what each framework records besides HF's full set (the whole matrix re-records in well under an hour)
SEVEN = ("correct-resume", "correct-resume-buffered", "fresh-start", "partial-save", "sigterm-handler",
         "sigterm-no-handler", "dir-changes")  # fmt: skip
TORCHRUN1 = ["torchrun", "--nproc_per_node", "1", "/workspace/train.py"]
TORCHRUN2 = ["torchrun", "--nproc_per_node", "2", "/workspace/train.py"]
LIGHTNING = ("torch", "lightning", "pytorch-lightning", "rich", "tqdm")

RUNS: list[Run] = [
    *hf_runs("4.57", "hf4"),
    *hf_runs("5.24", "hf5"),
    *common_runs("lightning-2.5", "lightning", "hf4", LIGHTNING, "lightning_train", ["python", "/workspace/train.py"],
                 only=SEVEN),
    *common_runs("lightning-2.6", "lightning", "hf5", LIGHTNING, "lightning_train", ["python", "/workspace/train.py"],
                 only=(*SEVEN, "slow-save-grace")),
    *common_runs("accelerate-1.15", "accelerate", "hf5", ("torch", "accelerate", "tqdm"), "accelerate_train",
                 ["accelerate", "launch", "--cpu", "--num_processes", "1", "/workspace/train.py"],
                 only=(*SEVEN, "lexical-sort")),
    *common_runs("dcp-1rank", "torch-dcp", "hf5", ("torch",), "dcp_train", TORCHRUN1,
                 only=(*SEVEN, "lexical-sort", "slow-save-grace")),
    *loop_variants(),
    *common_runs("dcp-2ranks", "torch-dcp", "hf5", ("torch",), "dcp_train", TORCHRUN2, kill_rank=True, ranks=2,
                 only=("correct-resume", "partial-save", "sigterm-handler")),
    # DeepSpeed 0.19 on CPU JIT-compiles its shared-memory comm op (g++/ninja) inside init_distributed:
    # build_envs.py builds it once, so that no recording waits on a compiler
    *common_runs("deepspeed-0.19", "deepspeed", "hf4", ("torch", "deepspeed"), "deepspeed_train", TORCHRUN1,
                 only=SEVEN),
    *common_runs("orbax-0.12", "orbax", "jax", ("jax", "jaxlib", "orbax-checkpoint", "optax"), "orbax_train",
                 ["python", "/workspace/train.py"], only=SEVEN),
]

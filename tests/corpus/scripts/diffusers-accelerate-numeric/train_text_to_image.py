"""Checkpointing of a diffusers text-to-image fine-tune (accelerate save_state/load_state)."""

import argparse
import logging
import os
import shutil

from accelerate import Accelerator
from accelerate.utils import ProjectConfiguration

logger = logging.getLogger(__name__)


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output_dir", type=str, default="sd-model-finetuned")
    parser.add_argument("--checkpointing_steps", type=int, default=500)
    parser.add_argument("--checkpoints_total_limit", type=int, default=None)
    parser.add_argument("--resume_from_checkpoint", type=str, default=None)
    return parser.parse_args()


def main():
    args = parse_args()
    accelerator = Accelerator(project_config=ProjectConfiguration(project_dir=args.output_dir))
    global_step = 0
    if args.resume_from_checkpoint:
        if args.resume_from_checkpoint != "latest":
            path = os.path.basename(args.resume_from_checkpoint)
        else:
            dirs = os.listdir(args.output_dir)
            dirs = [d for d in dirs if d.startswith("checkpoint")]
            dirs = sorted(dirs, key=lambda x: int(x.split("-")[1]))
            path = dirs[-1] if len(dirs) > 0 else None
        if path is None:
            accelerator.print(f"Checkpoint '{args.resume_from_checkpoint}' does not exist. Starting a new training run.")
        else:
            accelerator.print(f"Resuming from checkpoint {path}")
            accelerator.load_state(os.path.join(args.output_dir, path))
            global_step = int(path.split("-")[1])

    for step in range(global_step, 10_000):
        global_step += 1
        if global_step % args.checkpointing_steps == 0 and accelerator.is_main_process:
            if args.checkpoints_total_limit is not None:
                checkpoints = sorted(
                    (d for d in os.listdir(args.output_dir) if d.startswith("checkpoint")),
                    key=lambda x: int(x.split("-")[1]),
                )
                if len(checkpoints) >= args.checkpoints_total_limit:
                    for old in checkpoints[: len(checkpoints) - args.checkpoints_total_limit + 1]:
                        shutil.rmtree(os.path.join(args.output_dir, old))
            save_path = os.path.join(args.output_dir, f"checkpoint-{global_step}")
            accelerator.save_state(save_path)
            logger.info(f"Saved state to {save_path}")


if __name__ == "__main__":
    main()

"""Checkpointing of accelerate's complete NLP example (epoch_N / step_N folders)."""

import argparse
import os

from accelerate import Accelerator


def training_function(config, args):
    accelerator = Accelerator(cpu=args.cpu, project_dir=args.project_dir)
    model, optimizer, train_dataloader, lr_scheduler = accelerator.prepare(*config["objects"])
    num_epochs = config["num_epochs"]
    checkpointing_steps = int(args.checkpointing_steps) if args.checkpointing_steps.isdigit() else args.checkpointing_steps
    overall_step = 0
    starting_epoch = 0
    resume_step = None

    if args.resume_from_checkpoint:
        if args.resume_from_checkpoint is not None or args.resume_from_checkpoint != "":
            accelerator.print(f"Resumed from checkpoint: {args.resume_from_checkpoint}")
            accelerator.load_state(args.resume_from_checkpoint)
            path = os.path.basename(args.resume_from_checkpoint)
        else:
            # the most recent folder by creation time
            dirs = [f.name for f in os.scandir(os.getcwd()) if f.is_dir()]
            dirs.sort(key=os.path.getctime)
            path = dirs[-1]
        training_difference = os.path.splitext(path)[0]
        if "epoch" in training_difference:
            starting_epoch = int(training_difference.replace("epoch_", "")) + 1
        else:
            resume_step = int(training_difference.replace("step_", ""))
            starting_epoch = resume_step // len(train_dataloader)
            resume_step -= starting_epoch * len(train_dataloader)

    for epoch in range(starting_epoch, num_epochs):
        if args.resume_from_checkpoint and epoch == starting_epoch and resume_step is not None:
            active_dataloader = accelerator.skip_first_batches(train_dataloader, resume_step)
            overall_step += resume_step
        else:
            active_dataloader = train_dataloader
        for _batch in active_dataloader:
            overall_step += 1
            if isinstance(checkpointing_steps, int) and overall_step % checkpointing_steps == 0:
                accelerator.save_state(os.path.join(args.output_dir, f"step_{overall_step}"))
        if checkpointing_steps == "epoch":
            accelerator.save_state(os.path.join(args.output_dir, f"epoch_{epoch}"))


def main():
    parser = argparse.ArgumentParser(description="Simple example of training script.")
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--checkpointing_steps", type=str, default="epoch")
    parser.add_argument("--resume_from_checkpoint", type=str, default=None)
    parser.add_argument("--output_dir", type=str, default=".")
    parser.add_argument("--project_dir", type=str, default="logs")
    args = parser.parse_args()
    training_function({"num_epochs": 3, "objects": ()}, args)


if __name__ == "__main__":
    main()

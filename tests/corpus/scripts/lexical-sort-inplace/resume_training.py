"""Resume a diffusion model from its latest epoch checkpoint (checkpoint_epoch_<N>.pt files)."""

import glob
import os

import torch

from train import build_model, train


def find_latest_checkpoint(checkpoint_dir="checkpoints"):
    checkpoints = glob.glob(os.path.join(checkpoint_dir, "checkpoint_epoch_*.pt"))
    if not checkpoints:
        print("no checkpoint found")
        return None
    checkpoints.sort()  # "by epoch number": epoch_10 sorts before epoch_9
    latest = checkpoints[-1]
    print(f"latest checkpoint: {latest}")
    return latest


def save_epoch(model, optimizer, epoch, checkpoint_dir="checkpoints"):
    path = os.path.join(checkpoint_dir, f"checkpoint_epoch_{epoch}.pt")
    torch.save({"epoch": epoch, "model_state_dict": model.state_dict(),
                "optimizer_state_dict": optimizer.state_dict()}, path)


if __name__ == "__main__":
    latest_checkpoint = find_latest_checkpoint()
    model, optimizer = build_model()
    if latest_checkpoint:
        state = torch.load(latest_checkpoint, map_location="cpu")
        model.load_state_dict(state["model_state_dict"])
        optimizer.load_state_dict(state["optimizer_state_dict"])
        print(f"resuming from {latest_checkpoint}")
        train(model, optimizer, start_epoch=state["epoch"] + 1, on_epoch_end=save_epoch)
    else:
        train(model, optimizer, start_epoch=0, on_epoch_end=save_epoch)

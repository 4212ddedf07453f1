"""ImageNet training in the shape of pytorch/examples imagenet/main.py: --resume PATH."""

import argparse
import os
import shutil

import torch
import torchvision.models as models
from torch.optim.lr_scheduler import StepLR

parser = argparse.ArgumentParser(description="PyTorch ImageNet Training")
parser.add_argument("data", metavar="DIR")
parser.add_argument("--epochs", default=90, type=int)
parser.add_argument("--start-epoch", default=0, type=int)
parser.add_argument("--resume", default="", type=str, metavar="PATH", help="path to latest checkpoint (default: none)")
best_acc1 = 0


def main():
    global best_acc1
    args = parser.parse_args()
    model = models.resnet18()
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9)
    scheduler = StepLR(optimizer, step_size=30, gamma=0.1)

    if args.resume:
        if os.path.isfile(args.resume):
            print("=> loading checkpoint '{}'".format(args.resume))
            checkpoint = torch.load(args.resume, map_location="cuda:0")
            args.start_epoch = checkpoint["epoch"]
            best_acc1 = checkpoint["best_acc1"]
            model.load_state_dict(checkpoint["state_dict"])
            optimizer.load_state_dict(checkpoint["optimizer"])
            scheduler.load_state_dict(checkpoint["scheduler"])
            print("=> loaded checkpoint '{}' (epoch {})".format(args.resume, checkpoint["epoch"]))
        else:
            print("=> no checkpoint found at '{}'".format(args.resume))

    for epoch in range(args.start_epoch, args.epochs):
        acc1 = train_one_epoch(model, optimizer, epoch)
        scheduler.step()
        is_best = acc1 > best_acc1
        best_acc1 = max(acc1, best_acc1)
        save_checkpoint(
            {
                "epoch": epoch + 1,
                "arch": "resnet18",
                "state_dict": model.state_dict(),
                "best_acc1": best_acc1,
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
            },
            is_best,
        )


def train_one_epoch(model, optimizer, epoch):
    return 0.0


def save_checkpoint(state, is_best, filename="checkpoint.pth.tar"):
    torch.save(state, filename)
    if is_best:
        shutil.copyfile(filename, "model_best.pth.tar")


if __name__ == "__main__":
    main()

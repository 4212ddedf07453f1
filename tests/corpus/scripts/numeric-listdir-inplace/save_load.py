"""Same helpers as lexical-listdir-inplace, with the epoch number as the sort key."""

import os

import torch


def save(ckpt_dir, net, optim, epoch):
    os.makedirs(ckpt_dir, exist_ok=True)
    torch.save({"net": net.state_dict(), "optim": optim.state_dict()}, "./%s/model_epoch%d.pth" % (ckpt_dir, epoch))


def load(ckpt_dir, net, optim=None):
    if not os.path.exists(ckpt_dir):
        return net, optim, 0
    ckpt_lst = os.listdir(ckpt_dir)
    ckpt_lst.sort(key=lambda f: int("".join(filter(str.isdigit, f))))

    dict_model = torch.load("./%s/%s" % (ckpt_dir, ckpt_lst[-1]))
    net.load_state_dict(dict_model["net"])
    if optim is not None:
        optim.load_state_dict(dict_model["optim"])
    epoch = int(ckpt_lst[-1].split("epoch")[1].split(".pth")[0])
    return net, optim, epoch


def newest_epoch(ckpt_dir):
    # numbers parsed first, then max: numeric as well
    return max(int(f.split("epoch")[1].split(".")[0]) for f in os.listdir(ckpt_dir) if f.startswith("model_epoch"))

"""Save/load helpers of a U-Net tutorial project: one model_epoch<N>.pth per epoch in ckpt_dir."""

import os

import torch


def save(ckpt_dir, net, optim, epoch):
    if not os.path.exists(ckpt_dir):
        os.makedirs(ckpt_dir)
    torch.save({"net": net.state_dict(), "optim": optim.state_dict()},
               "./%s/model_epoch%d.pth" % (ckpt_dir, epoch))


def load(ckpt_dir, net, optim):
    if not os.path.exists(ckpt_dir):
        return net, optim, 0
    ckpt_lst = os.listdir(ckpt_dir)
    ckpt_lst.sort()

    dict_model = torch.load("./%s/%s" % (ckpt_dir, ckpt_lst[-1]))
    net.load_state_dict(dict_model["net"])
    optim.load_state_dict(dict_model["optim"])
    epoch = int(ckpt_lst[-1].split("epoch")[1].split(".pth")[0])
    return net, optim, epoch

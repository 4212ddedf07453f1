"""HiFi-GAN-style training: generator/discriminator checkpoints named g_00050000, do_00050000."""

import argparse
import glob
import os

import torch


def scan_checkpoint(cp_dir, prefix):
    pattern = os.path.join(cp_dir, prefix + "????????")
    cp_list = glob.glob(pattern)
    if len(cp_list) == 0:
        return None
    return sorted(cp_list)[-1]


def save_checkpoint(filepath, obj):
    print("Saving checkpoint to {}".format(filepath))
    torch.save(obj, filepath)


def train(a, generator, mpd, optim_g, optim_d):
    steps = 0
    cp_g = scan_checkpoint(a.checkpoint_path, "g_")
    cp_do = scan_checkpoint(a.checkpoint_path, "do_")
    if cp_g is not None and cp_do is not None:
        generator.load_state_dict(torch.load(cp_g, map_location="cuda")["generator"])
        state_dict_do = torch.load(cp_do, map_location="cuda")
        mpd.load_state_dict(state_dict_do["mpd"])
        optim_g.load_state_dict(state_dict_do["optim_g"])
        steps = state_dict_do["steps"] + 1
    while True:
        steps += 1
        if steps % a.checkpoint_interval == 0:
            save_checkpoint("{}/g_{:08d}".format(a.checkpoint_path, steps), {"generator": generator.state_dict()})
            save_checkpoint(
                "{}/do_{:08d}".format(a.checkpoint_path, steps),
                {"mpd": mpd.state_dict(), "optim_g": optim_g.state_dict(), "optim_d": optim_d.state_dict(),
                 "steps": steps},
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint_path", default="cp_hifigan")
    parser.add_argument("--checkpoint_interval", default=5000, type=int)
    train(parser.parse_args(), None, None, None, None)

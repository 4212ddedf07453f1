"""DeepSpeed engine training with save_checkpoint/load_checkpoint and a client state for the step."""

import argparse

import deepspeed
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--save_dir", default="/mnt/ckpt/ds-run")
parser.add_argument("--load_dir", default="/mnt/ckpt/ds-run")
parser.add_argument("--ckpt_id", default=None)
parser.add_argument("--save_interval", type=int, default=100)
parser = deepspeed.add_config_arguments(parser)
args = parser.parse_args()

net = torch.nn.Linear(128, 128)
model_engine, optimizer, data_loader, _ = deepspeed.initialize(
    args=args, model=net, model_parameters=net.parameters(), config="ds_config.json"
)

# tag None: DeepSpeed reads the `latest` file in load_dir to pick the tag
_, client_sd = model_engine.load_checkpoint(args.load_dir, args.ckpt_id)
step = client_sd["step"] if client_sd else 0

for step, batch in enumerate(data_loader, start=step):
    loss = model_engine(batch).sum()
    model_engine.backward(loss)
    model_engine.step()
    if step % args.save_interval == 0:
        client_sd = {"step": step}
        model_engine.save_checkpoint(args.save_dir, f"global_step{step}", client_state=client_sd)

"""Module-level GPT training loop in the shape of nanoGPT's train.py: torchrun DDP, init_from = 'resume'."""

import os

import torch
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP

from model import GPT, GPTConfig

out_dir = "out"
init_from = "scratch"  # 'scratch' or 'resume'
eval_interval = 2000
max_iters = 600000
exec(open("configurator.py").read())  # command-line / file overrides
config = {k: v for k, v in globals().items() if k in ("out_dir", "init_from", "max_iters")}

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    init_process_group(backend="nccl")
    ddp_local_rank = int(os.environ["LOCAL_RANK"])
    master_process = int(os.environ["RANK"]) == 0
    device = f"cuda:{ddp_local_rank}"
else:
    master_process, device = True, "cuda"

iter_num = 0
best_val_loss = 1e9
model_args = dict(n_layer=12, n_head=12, n_embd=768, block_size=1024, bias=False, vocab_size=None)
if init_from == "scratch":
    model = GPT(GPTConfig(**model_args))
elif init_from == "resume":
    print(f"Resuming training from {out_dir}")
    ckpt_path = os.path.join(out_dir, "ckpt.pt")
    checkpoint = torch.load(ckpt_path, map_location=device)
    model_args.update(checkpoint["model_args"])
    model = GPT(GPTConfig(**model_args))
    model.load_state_dict(checkpoint["model"])
    iter_num = checkpoint["iter_num"]
    best_val_loss = checkpoint["best_val_loss"]

optimizer = model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), "cuda")
if init_from == "resume":
    optimizer.load_state_dict(checkpoint["optimizer"])
checkpoint = None  # free up memory
if ddp:
    model = DDP(model, device_ids=[ddp_local_rank])
raw_model = model.module if ddp else model

while iter_num <= max_iters:
    if iter_num % eval_interval == 0 and master_process and iter_num > 0:
        checkpoint = {
            "model": raw_model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "model_args": model_args,
            "iter_num": iter_num,
            "best_val_loss": best_val_loss,
            "config": config,
        }
        print(f"saving checkpoint to {out_dir}")
        torch.save(checkpoint, os.path.join(out_dir, "ckpt.pt"))
    iter_num += 1

if ddp:
    destroy_process_group()

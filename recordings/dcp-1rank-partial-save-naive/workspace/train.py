"""DDP training under torchrun with torch.distributed.checkpoint (DCP), written the way many loops are: saves into
CKPT_DIR/step_{N:06d} every 10 steps; on start it picks the directory with the highest number without checking
that its save finished (DCP writes `.metadata` last), says so, and loads it through its own load_checkpoint."""

import os
import re

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT_DIR = os.environ.get("CKPT_DIR", "/mnt/checkpoints/run")
MAX_STEPS = int(os.environ.get("MAX_STEPS", "40"))
SAVE_EVERY = 10
STEPS_PER_EPOCH = 250


class TinyLM(torch.nn.Module):
    def __init__(self, vocab=128, dim=32):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.mix = torch.nn.Linear(dim, dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, x):
        return self.head(torch.tanh(self.mix(self.emb(x))))


def newest(root):
    if not os.path.isdir(root):
        return None, 0
    steps = [int(m.group(1)) for d in os.listdir(root) if (m := re.fullmatch(r"step_(\d+)", d))]
    return (os.path.join(root, f"step_{max(steps):06d}"), max(steps)) if steps else (None, 0)


def load_checkpoint(path, model, optimizer):
    model_sd, optim_sd = get_state_dict(model, optimizer)
    state = {"model": model_sd, "optim": optim_sd, "step": 0}
    dcp.load(state, checkpoint_id=path)
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    return state["step"]


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(TinyLM())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randint(0, 128, (2000, 32), generator=torch.Generator().manual_seed(rank))

    path, step = newest(CKPT_DIR)
    if path:
        if rank == 0:
            print(f"resuming from {path} (global_step {step}, epoch {step // STEPS_PER_EPOCH})", flush=True)
        step = load_checkpoint(path, model, optimizer)
    elif rank == 0:
        print(f"no checkpoint found in {CKPT_DIR}: training from scratch", flush=True)

    while step < MAX_STEPS:
        x = data[(step * 8) % 2000 : (step * 8) % 2000 + 8]
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        if rank == 0 and step % 5 == 0:
            print(f"[step {step}/{MAX_STEPS}] loss={loss.item():.4f} lr=1.0e-03")
        if step % SAVE_EVERY == 0:
            model_sd, optim_sd = get_state_dict(model, optimizer)
            target = os.path.join(CKPT_DIR, f"step_{step:06d}")
            dcp.save({"model": model_sd, "optim": optim_sd, "step": step}, checkpoint_id=target)
            if rank == 0:
                print(f"checkpoint saved to {target} (global_step {step})")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

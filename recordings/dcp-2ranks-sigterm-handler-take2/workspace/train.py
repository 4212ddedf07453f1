"""DDP training under torchrun with torch.distributed.checkpoint (DCP): every 10 steps each rank writes its
shard to CKPT_DIR/step-N; on start, resume from the newest step-N whose .metadata exists (DCP writes it
last, so a checkpoint without it is incomplete)."""

import os
import re
import signal

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel as DDP

CKPT_DIR = os.environ.get("CKPT_DIR", "/mnt/checkpoints/run")
MAX_STEPS = int(os.environ.get("MAX_STEPS", "40"))
SAVE_EVERY = 10


class TinyLM(torch.nn.Module):
    def __init__(self, vocab=128, dim=32):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.mix = torch.nn.Linear(dim, dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, x):
        return self.head(torch.tanh(self.mix(self.emb(x))))


def newest_complete(root):
    if not os.path.isdir(root):
        return None, 0
    steps = [int(m.group(1)) for d in os.listdir(root) if (m := re.fullmatch(r"step-(\d+)", d))
             and os.path.exists(os.path.join(root, d, ".metadata"))]
    return (os.path.join(root, f"step-{max(steps)}"), max(steps)) if steps else (None, 0)


STOP = {"now": False}


def main():
    signal.signal(signal.SIGTERM, lambda *_: STOP.update(now=True))
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(TinyLM())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randint(0, 128, (2000, 32), generator=torch.Generator().manual_seed(rank))

    path, step = newest_complete(CKPT_DIR)
    if path:
        model_sd, optim_sd = get_state_dict(model, optimizer)
        state = {"model": model_sd, "optim": optim_sd, "step": step}
        dcp.load(state, checkpoint_id=path)
        set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
        step = state["step"]
        if rank == 0:
            print(f"resumed from {path} at step {step}")
    elif rank == 0:
        print(f"no checkpoint in {CKPT_DIR}, starting at step 0")

    while step < MAX_STEPS:
        x = data[(step * 8) % 2000 : (step * 8) % 2000 + 8]
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        if rank == 0 and step % 5 == 0:
            print(f"step {step}/{MAX_STEPS} loss {loss.item():.4f}")
        stop = torch.tensor([int(STOP["now"])])
        dist.all_reduce(stop)
        if step % SAVE_EVERY == 0 or stop.item():
            model_sd, optim_sd = get_state_dict(model, optimizer)
            dcp.save({"model": model_sd, "optim": optim_sd, "step": step},
                     checkpoint_id=os.path.join(CKPT_DIR, f"step-{step}"))
            if rank == 0:
                print(f"saved checkpoint {CKPT_DIR}/step-{step}")
        if stop.item():
            if rank == 0:
                print(f"SIGTERM: saved step {step}, exiting")
            break
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

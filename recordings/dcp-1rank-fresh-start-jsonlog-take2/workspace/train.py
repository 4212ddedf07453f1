"""DDP training under torchrun with torch.distributed.checkpoint (DCP) that logs structured records: every log
line is a JSON object (a JSON formatter on the logging module), the numbers in its fields, not in its message;
a tqdm bar per epoch (`Epoch E: k/M`, as training_hub/instructlab draw theirs). Saves CKPT_DIR/step-N every 10
steps; on start, resumes from the newest step-N whose .metadata exists."""

import json
import logging
import os
import re
import sys
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

CKPT_DIR = os.environ.get("CKPT_DIR", "/mnt/checkpoints/run")
MAX_STEPS = int(os.environ.get("MAX_STEPS", "40"))
SAVE_EVERY = 10
STEPS_PER_EPOCH = 15
RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record):
        out = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + "Z",
               "level": record.levelname, "logger": record.name, "msg": record.getMessage()}
        out.update({k: v for k, v in vars(record).items() if k not in RESERVED})
        return json.dumps(out)


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


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("train")
    log.addHandler(handler)
    log.setLevel(logging.INFO if rank == 0 else logging.WARNING)
    torch.manual_seed(0)
    model = DDP(TinyLM())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randint(0, 128, (2000, 32), generator=torch.Generator().manual_seed(rank))

    path, step = newest_complete(CKPT_DIR) if os.environ.get("RESUME", "1") == "1" else (None, 0)
    if path:
        model_sd, optim_sd = get_state_dict(model, optimizer)
        state = {"model": model_sd, "optim": optim_sd, "step": step}
        dcp.load(state, checkpoint_id=path)
        set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
        step = state["step"]
        log.info("resumed from checkpoint", extra={"global_step": step, "path": path})
    else:
        log.info("no checkpoint found, starting fresh", extra={"ckpt_dir": CKPT_DIR})

    bar = None
    while step < MAX_STEPS:
        epoch, k = divmod(step, STEPS_PER_EPOCH)
        if rank == 0 and (bar is None or k == 0):
            if bar is not None:
                bar.close()
            bar = tqdm(total=STEPS_PER_EPOCH, desc=f"Epoch {epoch}", initial=k)
        x = data[(step * 8) % 2000 : (step * 8) % 2000 + 8]
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        if bar is not None:
            bar.update(1)
        if step % 5 == 0:
            log.info("train", extra={"step": step, "epoch": epoch, "loss": round(loss.item(), 4)})
        if step % SAVE_EVERY == 0:
            model_sd, optim_sd = get_state_dict(model, optimizer)
            target = os.path.join(CKPT_DIR, f"step-{step}")
            dcp.save({"model": model_sd, "optim": optim_sd, "step": step}, checkpoint_id=target)
            log.info("saved checkpoint", extra={"step": step, "path": target})
    if bar is not None:
        bar.close()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""FSDP training with torch.distributed.checkpoint: every rank writes its shard."""

import os

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.checkpoint.stateful import Stateful
from torch.distributed.fsdp import fully_shard

CHECKPOINT_DIR = os.environ["CKPT_DIR"]


class AppState(Stateful):
    def __init__(self, model, optimizer=None):
        self.model = model
        self.optimizer = optimizer

    def state_dict(self):
        model_state_dict, optimizer_state_dict = get_state_dict(self.model, self.optimizer)
        return {"model": model_state_dict, "optim": optimizer_state_dict}

    def load_state_dict(self, state_dict):
        set_state_dict(self.model, self.optimizer, model_state_dict=state_dict["model"],
                       optim_state_dict=state_dict["optim"])


def main():
    dist.init_process_group("nccl")
    model = fully_shard(torch.nn.Linear(16, 8).cuda())
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    if os.path.exists(os.path.join(CHECKPOINT_DIR, ".metadata")):
        state_dict = {"app": AppState(model, optimizer)}
        dcp.load(state_dict=state_dict, checkpoint_id=CHECKPOINT_DIR)
        print(f"loaded DCP checkpoint from {CHECKPOINT_DIR}")
    for step in range(100):
        optimizer.zero_grad()
        model(torch.rand(8, 16, device="cuda")).sum().backward()
        optimizer.step()
        if step % 10 == 0:
            state_dict = {"app": AppState(model, optimizer)}
            dcp.save(state_dict, checkpoint_id=CHECKPOINT_DIR)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

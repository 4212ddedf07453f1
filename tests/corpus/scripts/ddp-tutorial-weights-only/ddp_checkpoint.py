"""DDP training that "checkpoints" by saving the wrapped model's state_dict from rank 0."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

CHECKPOINT_PATH = os.path.join(os.environ.get("CKPT_DIR", "/tmp"), "model.checkpoint")


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    model = torch.nn.Linear(10, 5).to(local_rank)
    ddp_model = DDP(model, device_ids=[local_rank])
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.001)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=100)

    if os.path.exists(CHECKPOINT_PATH):
        map_location = {"cuda:0": f"cuda:{local_rank}"}
        ddp_model.load_state_dict(torch.load(CHECKPOINT_PATH, map_location=map_location, weights_only=True))
        print(f"rank {rank}: loaded {CHECKPOINT_PATH}")

    for step in range(1000):
        optimizer.zero_grad()
        ddp_model(torch.randn(20, 10)).sum().backward()
        optimizer.step()
        scheduler.step()
        if step % 100 == 0:
            if rank == 0:
                # optimizer and scheduler are never written: a resume restarts the schedule
                torch.save(ddp_model.state_dict(), CHECKPOINT_PATH)
            dist.barrier()

    dist.destroy_process_group()


if __name__ == "__main__":
    main()

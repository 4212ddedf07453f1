"""A custom training loop with Hugging Face accelerate: save_state every 10 steps into CKPT_DIR/step_N,
resume from the newest step_N on start."""

import os
import glob

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from tqdm.auto import tqdm

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


def newest_checkpoint(root):
    names = sorted(glob.glob(os.path.join(root, "step_*")))
    return (names[-1], int(names[-1].rsplit("_", 1)[1])) if names else (None, 0)


def main():
    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    data = torch.randint(0, 128, (2000, 32), generator=torch.Generator().manual_seed(0))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=8, shuffle=True)
    model = TinyLM()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, 1.0, 0.1, total_iters=MAX_STEPS)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)

    path, step = newest_checkpoint(CKPT_DIR)
    if path:
        accelerator.print(f"Resuming from checkpoint {path} (step {step})")
        accelerator.load_state(path)
    else:
        accelerator.print("No checkpoint found, training from scratch")
    bar = tqdm(total=MAX_STEPS, initial=step, disable=not accelerator.is_local_main_process)
    batches = iter(loader)
    while step < MAX_STEPS:
        try:
            (x,) = next(batches)
        except StopIteration:
            batches = iter(loader)
            continue
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1))
        accelerator.backward(loss)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        step += 1
        bar.update(1)
        if step % 5 == 0:
            accelerator.print(f"step {step}: loss {loss.item():.4f}")
        if step % SAVE_EVERY == 0:
            accelerator.save_state(os.path.join(CKPT_DIR, f"step_{step}"))
            accelerator.print(f"Saved checkpoint {CKPT_DIR}/step_{step}")
    accelerator.print("Training finished")


if __name__ == "__main__":
    main()

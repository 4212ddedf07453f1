"""A custom PyTorch loop over an HF model that uses save_pretrained() folders as its checkpoints."""

import os

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, get_cosine_schedule_with_warmup
from transformers.trainer_utils import get_last_checkpoint

output_dir = os.environ.get("OUTPUT_DIR", "/mnt/ckpt/gpt2-custom")
base = "gpt2"

last = get_last_checkpoint(output_dir) if os.path.isdir(output_dir) else None
model = AutoModelForCausalLM.from_pretrained(last or base)  # resumes the weights, nothing else
tokenizer = AutoTokenizer.from_pretrained(base)
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
scheduler = get_cosine_schedule_with_warmup(optimizer, num_warmup_steps=100, num_training_steps=10_000)
start = int(last.rsplit("-", 1)[1]) if last else 0
print(f"starting at step {start}")

for step in range(start, 10_000):
    loss = model(**tokenizer("hello world", return_tensors="pt"), labels=None).loss
    loss.backward()
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()
    if step % 500 == 0:
        path = os.path.join(output_dir, f"checkpoint-{step}")
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)

"""The guide's runtime with the one-line "simplification" its troubleshooting table warns about."""

import glob
import os

from transformers import Trainer, TrainingArguments

ckpt_dir = os.environ.get("CKPT_DIR", "/mnt/ckpt/run")


def latest_checkpoint(root):
    # checkpoint-9 sorts after checkpoint-100 as text
    found = sorted(glob.glob(os.path.join(root, "checkpoint-*")))
    return found[-1] if found else None


resume = latest_checkpoint(ckpt_dir)
print(f"[checkpoint] resuming from {resume}" if resume else "[checkpoint] no prior checkpoint, starting fresh")

args = TrainingArguments(
    output_dir=ckpt_dir,
    save_strategy="steps",
    save_steps=50,
    save_total_limit=3,
)
model, train_dataset = ..., ...
trainer = Trainer(model=model, args=args, train_dataset=train_dataset)
trainer.train(resume_from_checkpoint=resume)

# an eval helper elsewhere in the file: the same mistake, nested in one expression
best = sorted(glob.glob(os.path.join(args.output_dir, "checkpoint-*")))[-1]
print(f"evaluating {best}")

"""An HF fine-tune that finds its own checkpoint with pathlib before calling train()."""

import argparse
from pathlib import Path

from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--output-dir", default="/mnt/ckpt/llama-sft")
parser.add_argument("--save-steps", type=int, default=250)
parser.add_argument("--no-resume", action="store_true")
args = parser.parse_args()

ckpts = sorted(Path(args.output_dir).glob("checkpoint-*"))
last = str(ckpts[-1]) if ckpts and not args.no_resume else None

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B")
training_args = TrainingArguments(
    output_dir=args.output_dir,
    save_steps=args.save_steps,
    per_device_train_batch_size=4,
)
trainer = Trainer(model=model, args=training_args, train_dataset=None)
trainer.train(last)

# listing the run directory for the log is not a pick
print("run contents:", sorted(p.name for p in Path(args.output_dir).iterdir()))

"""SFTTrainer with an inline SFTConfig, as in TRL's sft_trainer quickstart, tuned for a PVC."""

import os

from datasets import load_dataset
from trl import SFTConfig, SFTTrainer

OUTPUT_DIR = os.environ.get("OUTPUT_DIR", "/mnt/ckpt/qwen-sft")
SAVE_ONLY_MODEL = True  # "checkpoints are big": drops optimizer.pt / scheduler.pt / rng_state

dataset = load_dataset("trl-lib/Capybara", split="train")

training_args = SFTConfig(
    output_dir=OUTPUT_DIR,
    save_strategy="steps",
    save_steps=200,
    save_only_model=SAVE_ONLY_MODEL,
    logging_steps=10,
    bf16=True,
)

trainer = SFTTrainer(
    model="Qwen/Qwen2.5-0.5B",
    args=training_args,
    train_dataset=dataset,
)
trainer.train(resume_from_checkpoint=True)
trainer.save_model(OUTPUT_DIR)
print(f"saved to {OUTPUT_DIR}")

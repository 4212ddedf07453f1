"""Fine-tune a small causal LM with the HF Trainer; resume from the newest checkpoint in CKPT_DIR."""

import os

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
from transformers.trainer_utils import get_last_checkpoint

CKPT_DIR = os.environ.get("CKPT_DIR", "/mnt/checkpoints/run")


class SyntheticTokens(torch.utils.data.Dataset):
    def __init__(self, n=2000, length=32, vocab=128):
        g = torch.Generator().manual_seed(0)
        self.data = torch.randint(0, vocab, (n, length), generator=g)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


def main():
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=128, n_positions=64))
    args = TrainingArguments(
        output_dir=CKPT_DIR,
        max_steps=int(os.environ.get("MAX_STEPS", "40")),
        per_device_train_batch_size=8,
        learning_rate=1e-3,
        logging_steps=5,
        save_strategy="steps",
        save_steps=10,
        save_total_limit=3,
        log_level="info",
        report_to="none",
        use_cpu=True,
        dataloader_num_workers=0,
    )
    last = get_last_checkpoint(CKPT_DIR) if os.path.isdir(CKPT_DIR) else None
    print(f"[checkpoint] resuming from {last}" if last else "[checkpoint] no prior checkpoint, starting fresh")
    trainer = Trainer(model=model, args=args, train_dataset=SyntheticTokens())
    trainer.train(resume_from_checkpoint=last)
    print("[checkpoint] done")


if __name__ == "__main__":
    main()

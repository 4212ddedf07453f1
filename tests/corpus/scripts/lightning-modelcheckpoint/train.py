"""A Lightning fit that checkpoints every N steps to the PVC and resumes from last.ckpt."""

import os

import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

CKPT_DIR = os.environ.get("CKPT_DIR", "/mnt/ckpt/lit-run")


class LitModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        loss = self.layer(batch).sum()
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


checkpoint_callback = ModelCheckpoint(
    dirpath=CKPT_DIR,
    filename="step-{step}",
    save_last=True,
    save_top_k=2,
    monitor="train_loss",
    every_n_train_steps=200,
)
trainer = L.Trainer(max_steps=5000, callbacks=[checkpoint_callback], default_root_dir=CKPT_DIR)
# "last" resumes from CKPT_DIR/last.ckpt when it exists, and starts fresh (with a warning) when not
trainer.fit(LitModel(), train_dataloaders=torch.utils.data.DataLoader(torch.randn(64, 32)), ckpt_path="last")
print(f"best: {checkpoint_callback.best_model_path}")

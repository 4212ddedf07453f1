"""Train a small LM with PyTorch Lightning; ModelCheckpoint every 10 steps, resume from last.ckpt."""

import os

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import Callback, ModelCheckpoint

CKPT_DIR = os.environ.get("CKPT_DIR", "/mnt/checkpoints/run")


class TinyLM(L.LightningModule):
    def __init__(self, vocab=128, dim=32):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.mix = torch.nn.Linear(dim, dim)
        self.head = torch.nn.Linear(dim, vocab)

    def training_step(self, batch, batch_idx):
        (x,) = batch
        logits = self.head(torch.tanh(self.mix(self.emb(x[:, :-1]))))
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1))
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


class SaveOnSigterm(Callback):
    """Lightning notes SIGTERM (trainer.received_sigterm); save last.ckpt at the end of the batch and stop."""

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.received_sigterm and not trainer.should_stop:
            print(f"[checkpoint] SIGTERM: saving at step {trainer.global_step}", flush=True)
            trainer.save_checkpoint(os.path.join(CKPT_DIR, "last.ckpt"))
            trainer.should_stop = True


def main():
    L.seed_everything(0)
    data = torch.randint(0, 128, (2000, 32), generator=torch.Generator().manual_seed(0))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=8, shuffle=True)
    checkpoint = ModelCheckpoint(dirpath=CKPT_DIR, filename="{step}", every_n_train_steps=10, save_top_k=-1,
                                 save_last=True)
    trainer = L.Trainer(max_steps=int(os.environ.get("MAX_STEPS", "40")), accelerator="cpu", devices=1,
                        callbacks=[checkpoint, SaveOnSigterm()], log_every_n_steps=5, logger=False)
    trainer.fit(TinyLM(), loader, ckpt_path="last")


if __name__ == "__main__":
    main()

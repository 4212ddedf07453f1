# Body of the `python - <<'PY'` here-document in the guide's checkpoint-aware runtime.
import glob
import os
import signal

from transformers import Trainer, TrainerCallback, TrainingArguments

ckpt_dir = os.environ["CKPT_DIR"]
os.makedirs(ckpt_dir, exist_ok=True)

# newest checkpoint-N by its number, never by text
ckpts = sorted(
    glob.glob(f"{ckpt_dir}/checkpoint-*"),
    key=lambda p: int(p.rsplit("-", 1)[1]),
)
resume = ckpts[-1] if ckpts else None
print(
    f"[checkpoint] resuming from {resume}" if resume else "[checkpoint] no prior checkpoint, starting fresh",
    flush=True,
)


class StopOnSigterm(TrainerCallback):
    requested = False

    def on_step_end(self, args, state, control, **kwargs):
        if StopOnSigterm.requested:
            control.should_save = True
            control.should_training_stop = True
        return control


def handle_sigterm(*_):
    print("[checkpoint] SIGTERM: flushing at next step", flush=True)
    StopOnSigterm.requested = True


signal.signal(signal.SIGTERM, handle_sigterm)

args = TrainingArguments(
    output_dir=ckpt_dir,
    save_strategy="steps",
    save_steps=int(os.environ["SAVE_STEPS"]),
    save_total_limit=2,
    num_train_epochs=float(os.environ["NUM_TRAIN_EPOCHS"]),
    report_to=[],
)

model, train_dataset = ..., ...  # placeholders, as in the guide

trainer = Trainer(model=model, args=args, train_dataset=train_dataset, callbacks=[StopOnSigterm()])
trainer.train(resume_from_checkpoint=resume)
trainer.save_model(f"{ckpt_dir}/final")
print("[checkpoint] done", flush=True)

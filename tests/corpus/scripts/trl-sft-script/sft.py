"""Supervised fine-tuning in the shape of TRL's trl/scripts/sft.py (v1.9)."""

import argparse


def main(script_args, training_args, model_args, dataset_args):
    from accelerate.logging import get_logger
    from datasets import load_dataset

    from trl import SFTTrainer, get_peft_config

    logger = get_logger(__name__)
    if not script_args.dataset_name:
        raise ValueError("Either `datasets` or `dataset_name` must be provided.")
    dataset = load_dataset(script_args.dataset_name, name=script_args.dataset_config)
    logger.info("dataset loaded")

    trainer = SFTTrainer(
        model=model_args.model_name_or_path,
        args=training_args,
        train_dataset=dataset[script_args.dataset_train_split],
        peft_config=get_peft_config(model_args),
    )

    # the CLI accepts --resume_from_checkpoint, but train() is called without it
    trainer.train()
    trainer.accelerator.print("Training completed.")

    trainer.save_model(training_args.output_dir)
    trainer.accelerator.print(f"Model saved to {training_args.output_dir}.")


def make_parser(subparsers: argparse._SubParsersAction | None = None):
    from trl import ModelConfig, ScriptArguments, SFTConfig, TrlParser

    dataclass_types = (ScriptArguments, SFTConfig, ModelConfig)
    if subparsers is not None:
        return subparsers.add_parser("sft", help="Run the SFT training script", dataclass_types=dataclass_types)
    return TrlParser(dataclass_types)


if __name__ == "__main__":
    parser = make_parser()
    script_args, training_args, model_args = parser.parse_args_and_config(fail_with_unknown_args=False)
    main(script_args, training_args, model_args, None)

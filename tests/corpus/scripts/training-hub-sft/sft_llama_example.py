#!/usr/bin/env python3
"""SFT of Llama 3.1 8B Instruct with training_hub on one node."""

import argparse
import sys
import time

from training_hub import sft


def main():
    parser = argparse.ArgumentParser(description="SFT Training Example")
    parser.add_argument("--data-path", required=True)
    parser.add_argument("--ckpt-output-dir", required=True)
    parser.add_argument("--model-path", default="meta-llama/Meta-Llama-3.1-8B-Instruct")
    parser.add_argument("--num-epochs", type=int, default=3)
    parser.add_argument("--nproc-per-node", type=int, default=8)
    args = parser.parse_args()

    print(f"Output: {args.ckpt_output_dir}")
    start = time.time()
    try:
        sft(
            model_path=args.model_path,
            data_path=args.data_path,
            ckpt_output_dir=args.ckpt_output_dir,
            num_epochs=args.num_epochs,
            effective_batch_size=128,
            learning_rate=1e-5,
            max_seq_len=16384,
            data_output_dir="/dev/shm",
            save_samples=0,
            checkpoint_at_epoch=True,
            accelerate_full_state_at_epoch=False,  # smaller checkpoints, but nothing to resume from
            nproc_per_node=args.nproc_per_node,
            nnodes=1,
            node_rank=0,
        )
    except Exception as e:
        print(f"Training failed after {(time.time() - start) / 60:.1f} minutes: {e}")
        sys.exit(1)
    print(f"Checkpoints: {args.ckpt_output_dir}/hf_format/")


if __name__ == "__main__":
    main()

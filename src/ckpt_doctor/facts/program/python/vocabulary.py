"""The words the Python reader looks for (names of listing functions, checkpoint-like words, ...).
"""

from __future__ import annotations

import re

_CKPT_WORDS = re.compile(r"checkpoint|ckpt|iter_|step|epoch|resume|snapshot", re.I)
_NOT_CKPT_EXT = re.compile(
    r"\.(?:json|jsonl|csv|tsv|txt|log|md|parquet|arrow|npz|npy|png|jpe?g|gif|wav|mp3|flac|tfrecords?|sql|"
    r"ya?ml|html|xml|zst|gz|tar|idx|bin_idx)\*?$|(?:^|[/_\-*])(?:shard|part|data|train|val|test|eval)[-_*]",
    re.I,
)
_RESUME_PATH_WORDS = re.compile(r"checkpoint|ckpt|resume|latest|last_|snapshot|step|epoch", re.I)
_SKIP_PRETRAINED = re.compile(r"token|processor|config|feature_extractor|extractor|scheduler", re.I)
_LISTING_FUNCS = {"glob", "iglob", "listdir", "scandir", "iterdir", "rglob"}
_TRANSPARENT = {"list", "tuple", "reversed", "set", "iter"}
_PRINT_LEVELS = {"info", "warning", "warn", "error", "debug", "critical", "exception", "fatal"}
_MAX_DISCOVERY_CANDIDATES = 400
_IO_NAMES = (
    "save",
    "load",
    "async_save",
    "save_state_dict",
    "load_state_dict",
    "save_state",
    "load_state",
    "save_model",
    "save_pretrained",
    "from_pretrained",
    "load_from_checkpoint",
    "save_checkpoint",
    "load_checkpoint",
    "save_file",
    "load_file",
)

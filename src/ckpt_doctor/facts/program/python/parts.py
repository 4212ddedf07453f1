"""The parts of training state a save or load holds (model, optimizer, scheduler, step, ...), and
what they add up to.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_COMPONENTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("optimizer", re.compile(r"optim|\bopt\b|opt_state|adam|sgd", re.I)),
    ("scheduler", re.compile(r"sched|lr_s|warmup", re.I)),
    ("scaler", re.compile(r"scaler|\bamp\b", re.I)),
    ("rng", re.compile(r"rng|random|seed", re.I)),
    ("data", re.compile(r"sampler|dataloader|data_loader|loader", re.I)),
    ("step", re.compile(r"step|epoch|iter|samples_seen|tokens_seen|progress", re.I)),
    (
        "model",
        re.compile(
            r"model|state_dict|weight|net|module|param|ema|encoder|decoder|generator|discriminator|unet|"
            r"policy|actor|critic|transformer|lora|adapter|backbone|classifier",
            re.I,
        ),
    ),
)


_KEY_PARTS = ("optimizer", "scheduler", "step")


def _component(text: str) -> str | None:
    for name, rx in _COMPONENTS:
        if rx.search(text):
            return name
    return None


def _content(parts: set[str]) -> str:
    if "optimizer" in parts and "model" in parts:
        return "full"
    if "model" in parts:
        return "weights"
    if parts:
        return "state"
    return "unknown"


def _missing(parts: Iterable[str], content: str) -> tuple[str, ...]:
    if content in ("full", "unknown"):
        return ()
    have = set(parts)
    return tuple(p for p in _KEY_PARTS if p not in have)

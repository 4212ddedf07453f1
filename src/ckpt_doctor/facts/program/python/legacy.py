"""Framework-specific helpers (being moved to the framework modules)."""

from __future__ import annotations

import ast
import re

from ckpt_doctor.facts.program.python.facts import (
    Call,
)
from ckpt_doctor.facts.program.python.tree import (
    _last,
)
from ckpt_doctor.facts.program.python.vocabulary import (
    _NOT_TRAINING_CONFIGS,
    _TRAINER_HF_MODULES,
    _TRL_CONFIGS,
)


class Legacy:
    def _is_hf_module(self, q: str | None) -> bool:
        return bool(q) and q.split(".")[0] in _TRAINER_HF_MODULES  # type: ignore[union-attr]

    def _hf_imported(self) -> bool:
        return any(m in self.imports for m in _TRAINER_HF_MODULES)

    def _classify_trainer(self, node: ast.Call) -> str | None:
        """ "Trainer" (HF-style), "lightning.Trainer" or None."""
        name = _last(node.func)
        if not name.endswith("Trainer"):
            return None
        q = self.qual(node.func) or name
        if q.startswith(("lightning", "pytorch_lightning")):
            return "lightning.Trainer" if name == "Trainer" else None
        bases = self._local_class_bases(name)
        if bases is not None and not any(b.rsplit(".", 1)[-1].endswith("Trainer") for b in bases):
            return None
        return "Trainer"

    def _hf_trainer(self, node: ast.Call) -> bool:
        name = _last(node.func)
        q = self.qual(node.func) or name
        if self._is_hf_module(q):
            return True
        bases = self._local_class_bases(name)
        if bases is not None:
            return any(self._is_hf_module(b) or (b.endswith("Trainer") and self._hf_imported()) for b in bases)
        return "." not in q and self._hf_imported()  # a bare name: HF when transformers/trl are imported

    def _is_training_args(self, node: ast.Call) -> bool:
        name = _last(node.func)
        if name in _NOT_TRAINING_CONFIGS:
            return False
        q = self.qual(node.func) or name
        if name.endswith("TrainingArguments") or name in _TRL_CONFIGS:
            return True
        if q.startswith("trl.") and name.endswith("Config"):
            return True
        bases = self._local_class_bases(name)
        if bases:
            return any(b.rsplit(".", 1)[-1].endswith("TrainingArguments") or b in _TRL_CONFIGS for b in bases)
        return False

    def _pl_imported(self) -> bool:
        return "lightning" in self.imports or "pytorch_lightning" in self.imports

    def _is_hf_get_last(self, node: ast.Call) -> bool:
        q = self.qual(node.func) or ""
        if q.startswith("transformers"):
            return True
        return "get_last_checkpoint" not in self.funcs

    def _accelerate_project_dir(self, calls: dict[str, list[Call]]) -> str | None:
        for c in calls.get("Accelerator", ()):
            for k in ("project_dir", "logging_dir"):
                if k in c.kwargs:
                    return c.kwargs[k].source
        return None

    def _is_accelerate(self, node: ast.Call) -> bool:
        f = node.func
        if not isinstance(f, ast.Attribute):
            return False
        recv = self.seg(f.value, 80)
        if re.search(r"accel", recv, re.I):
            return True
        q = self.qual(f) or ""
        if q.startswith("accelerate"):
            return True
        return "accelerate" in self.imports and not re.search(r"trainer|fabric", recv, re.I)

    def _deepspeed_engine(self, node: ast.Call) -> bool:
        f = node.func
        if not isinstance(f, ast.Attribute):
            return False
        recv = self.seg(f.value, 80)
        if re.search(r"trainer", recv, re.I) and self._pl_imported():
            return False
        return "deepspeed" in self.imports or bool(re.search(r"engine|deepspeed|\bds_", recv, re.I))

    def _training_args_for(self, trainer: Call) -> Call | None:
        a = trainer.kwargs.get("args")
        if a is not None and a.source in self.ta_by_name:
            return self.ta_by_name[a.source]
        return self._training_args_for_any()

    def _training_args_for_any(self) -> Call | None:
        return self.ta_calls[0] if len(self.ta_calls) == 1 else None

"""The TrainJob the user asked for, and where to find it (no engine or Textual imports)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class Target:
    """What the user asked for on the command line."""

    bundle: Path | None = None
    trainjob: str | None = None  # NAME or NAMESPACE/NAME
    namespace: str | None = None
    context: str | None = None
    kubeconfig: str | None = None
    timeout: float = 15.0
    trainer_version: str | None = None  # --trainer-version, for the engine
    signatures: tuple[Path, ...] = ()  # --signatures, extra log signature directories
    playbook: Path | None = None  # --playbook: the drill's, when the app runs it (default: verify-resume)
    inspect: bool = False  # list the checkpoint directory through exec (the palette's "Inspect checkpoints")
    listed_in: str | None = None  # the namespace the live picker listed (-n, else the context's), once known
    simulated: bool = False  # the live picker's cluster is `ckpt-doctor sandbox` (its API server's version says so)

    @property
    def live(self) -> bool:
        return self.bundle is None

    def qualified(self, name: str | None = None) -> str | None:
        """NAMESPACE/NAME for `name` (default: the target), using -n when no namespace is given."""
        name = name or self.trainjob
        if not name or "/" in name or not self.namespace:
            return name
        return f"{self.namespace}/{name}"

    def describe(self) -> str:
        if self.bundle is not None:
            return f"bundle {self.bundle.name}"
        where = f"context {self.context}" if self.context else "the current context"
        return f"cluster ({where})"

    def describe_listing(self) -> str:
        """Where the picker looked: one namespace of the cluster (a live listing is never cluster-wide)."""
        if self.bundle is not None:
            return self.describe()
        ns = self.listed_in or self.namespace
        where = f"context {self.context}" if self.context else "the current context"
        if self.simulated:
            from ckpt_doctor.simulation import WORDS

            where = f"{WORDS}, {where}"
        return f"namespace {ns} ({where})" if ns else f"the current namespace ({where})"

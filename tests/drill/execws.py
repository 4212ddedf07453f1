"""Moved into the tool: `ckpt_doctor.sandbox.execws` (the sandbox serves `kubectl exec` with it)."""

from ckpt_doctor.sandbox.execws import handler  # noqa: F401

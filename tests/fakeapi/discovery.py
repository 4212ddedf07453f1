"""Moved into the tool: `ckpt_doctor.sandbox.discovery`."""

from ckpt_doctor.sandbox.discovery import *  # noqa: F403
from ckpt_doctor.sandbox.discovery import RESOURCES, SUBRESOURCE_VERBS, ResourceType  # noqa: F401

"""The loopback Kubernetes API server for ckpt-doctor's tests: the sandbox's own (`ckpt_doctor.sandbox.apiserver`,
see README.md), under the name the tests grew up with."""

from .discovery import RESOURCES, ResourceType
from .server import DEFAULT_USER, ApiError, FakeKube, Fault, RequestRecord

__all__ = ["DEFAULT_USER", "RESOURCES", "ApiError", "FakeKube", "Fault", "RequestRecord", "ResourceType"]

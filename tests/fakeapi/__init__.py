"""A faithful fake Kubernetes API server on loopback HTTP, for ckpt-doctor's tests (see README.md)."""

from .discovery import RESOURCES, ResourceType
from .server import DEFAULT_USER, ApiError, FakeKube, Fault, RequestRecord

__all__ = ["DEFAULT_USER", "RESOURCES", "ApiError", "FakeKube", "Fault", "RequestRecord", "ResourceType"]

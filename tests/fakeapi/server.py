"""The loopback API server moved into the tool (`ckpt_doctor.sandbox.apiserver`, the sandbox's): this name stays
for the tests that grew up with it (`FakeKube`)."""

from ckpt_doctor.sandbox.apiserver import (  # noqa: F401
    _CHUNK,
    _REASONS,
    DEFAULT_USER,
    ApiError,
    Fault,
    RequestRecord,
    _Change,
    _Dropped,
    _Log,
    _Stream,
)
from ckpt_doctor.sandbox.apiserver import LoopbackApi as FakeKube  # noqa: F401

"""The simulated Trainer, JobSet, Job controller, scheduler and kubelet moved into the tool
(`ckpt_doctor.sandbox.controller`, what `ckpt-doctor sandbox` runs): this name stays for the drill's tests."""

from ckpt_doctor.sandbox.controller import (  # noqa: F401
    Program,
    Scenario,
    Simulator,
    Start,
    StartContext,
    VirtualClock,
    stamp,
)

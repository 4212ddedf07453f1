"""`ckpt-doctor sandbox`: a simulated cluster for trying every face of ckpt-doctor without one.

- `apiserver`: the loopback Kubernetes API (list, watch, exec, patch, delete, RBAC denials), in memory;
- `controller`: the simulated Trainer, JobSet, Job controller, scheduler and kubelet that run TrainJobs;
- `voice`: what a simulated trainer prints and saves (a recording of a real run, replayed; or the guide's
  convention); `volume`: the simulated disks its checkpoints land on, and what exec `ls`/`find`/`df` answer;
- `recordings`: the recordings' format; `scenarios`: the preloaded TrainJobs;
- `cluster`: all of it started together (`Sandbox`), the Python API tests and other faces use.
"""

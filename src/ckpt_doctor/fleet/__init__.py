"""The platform team's view: many TrainJobs diagnosed at once, each summed up in one row.

- `summary`: one Diagnosis as a row (state, attempts, steps lost, worst finding and its cause) and as the
  figures the watcher exports;
- `scan`: diagnose every TrainJob of a fleet collection or of a bundle, concurrently, one outcome each;
- `render`: the ranked table (text, markdown) and the fleet documents (json, sarif, junit).
"""

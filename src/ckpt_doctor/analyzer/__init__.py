"""The k8sgpt face: `ckpt-doctor analyzer`, a custom analyzer k8sgpt calls over gRPC (`schema.v1`).

- `k8sgpt_schema.proto`: the messages and services of k8sgpt's published schema that an analyzer serves;
  `k8sgpt_schema_pb2*.py` are generated from it by grpcio-tools and committed (a test regenerates them);
- `results`: one k8sgpt Result per TrainJob with failing findings, from the diagnoses (no gRPC);
- `server`: the gRPC service; imported only by the verb.
"""

"""The analyzer's gRPC stubs are committed: generating them again from the .proto gives the same bytes, and the
schema they describe is k8sgpt's (package, service and method names, field numbers and types on the wire)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROTO = "ckpt_doctor/analyzer/k8sgpt_schema.proto"
GENERATED = ("ckpt_doctor/analyzer/k8sgpt_schema_pb2.py", "ckpt_doctor/analyzer/k8sgpt_schema_pb2_grpc.py")


def test_regenerating_the_stubs_gives_the_committed_bytes(tmp_path: Path) -> None:
    protoc = pytest.importorskip("grpc_tools.protoc")
    src = tmp_path / "src"
    (src / "ckpt_doctor" / "analyzer").mkdir(parents=True)
    shutil.copy(ROOT / "src" / PROTO, src / PROTO)
    args = ["protoc", f"-I{src}", f"--python_out={src}", f"--grpc_python_out={src}", str(src / PROTO)]
    assert protoc.main(args) == 0
    for name in GENERATED:
        assert (src / name).read_bytes() == (ROOT / "src" / name).read_bytes(), (
            f"{name} is stale: python -m grpc_tools.protoc -I src --python_out=src --grpc_python_out=src src/{PROTO}"
        )


def test_the_schema_is_k8sgpts_on_the_wire() -> None:
    from ckpt_doctor.analyzer import k8sgpt_schema_pb2 as pb

    d = pb.DESCRIPTOR
    assert d.package == "schema.v1"
    methods = {s.full_name: {m.name: (m.input_type.name, m.output_type.name) for m in s.methods}
               for s in d.services_by_name.values()}  # fmt: skip
    assert methods == {
        "schema.v1.CustomAnalyzerService": {"Run": ("RunRequest", "RunResponse")},
        "schema.v1.AnalyzerService": {"Run": ("AnalyzerRunRequest", "AnalyzerRunResponse")},
    }

    def fields(message: str) -> dict[str, tuple[int, int, str]]:
        desc = d.message_types_by_name[message]
        return {f.name: (f.number, f.type, f.message_type.name if f.message_type else "") for f in desc.fields}

    s, m = 9, 11  # FieldDescriptor.TYPE_STRING, TYPE_MESSAGE
    assert fields("RunRequest") == fields("AnalyzerRunRequest") == {}
    assert fields("RunResponse") == fields("AnalyzerRunResponse") == {"result": (1, m, "Result")}
    assert fields("Result") == {
        "kind": (1, s, ""),
        "name": (2, s, ""),
        "error": (3, m, "ErrorDetail"),
        "details": (4, s, ""),
        "parent_object": (5, s, ""),
    }
    assert fields("ErrorDetail") == {"text": (1, s, ""), "sensitive": (2, m, "SensitiveData"), "doc": (3, s, "")}
    assert fields("SensitiveData") == {"unmasked": (1, s, ""), "masked": (2, s, "")}
    repeated = {f.name for msg in d.message_types_by_name.values() for f in msg.fields if f.is_repeated}
    assert repeated == {"error", "sensitive"}

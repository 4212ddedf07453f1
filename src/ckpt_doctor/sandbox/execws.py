"""`kubectl exec` for the fake API server: the WebSocket side of the channel protocol (v4.channel.k8s.io).

The client (the kubernetes package's `stream`, over websocket-client) upgrades a GET on
`/api/v1/namespaces/NS/pods/NAME/exec?command=…&container=…&stdout=true&stderr=true` to a WebSocket.
The server answers each frame with a channel byte first: 1 stdout, 2 stderr, 3 the final Status
(`{"status": "Success"}`, or `Failure` with an `ExitCode` cause). What a command does is up to `run`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from collections.abc import Callable
from typing import Any

from ckpt_doctor.sandbox.apiserver import FaultEffect

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
Run = Callable[[str, str, str, list[str]], tuple[int, bytes]]  # (namespace, pod, container, command) -> rc, output


def _frame(payload: bytes, opcode: int = 0x2) -> bytes:
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([n])
    elif n < 1 << 16:
        head += bytes([126]) + struct.pack("!H", n)
    else:
        head += bytes([127]) + struct.pack("!Q", n)
    return head + payload


def _status(rc: int) -> bytes:
    if rc == 0:
        return json.dumps({"metadata": {}, "status": "Success"}).encode()
    return json.dumps({
        "metadata": {}, "status": "Failure", "message": f"command terminated with non-zero exit code: {rc}",
        "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": str(rc)}]},
    }).encode()


def _refuse(h: Any, code: int, message: str) -> int:
    body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                       "code": code}).encode()
    h.send_response(code)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)
    return code


def handler(fake: Any, run: Run) -> Callable[[Any, str, dict[str, list[str]]], int]:
    """The LoopbackApi `upgrade` hook serving pods/exec with `run` (RBAC faults on create pods/exec apply)."""

    def serve(h: Any, path: str, query: dict[str, list[str]]) -> int:
        parts = path.strip("/").split("/")
        if len(parts) != 7 or parts[:3] != ["api", "v1", "namespaces"] or parts[4] != "pods" or parts[6] != "exec":
            return _refuse(h, 404, "the server could not find the requested resource")
        ns, pod = parts[3], parts[5]
        half_closed = False
        try:
            fake._check_faults("create", fake._types[("", "v1", "pods")], "exec", ns, pod)
        except FaultEffect as e:  # hang, a connection cut before the handshake, or a stream closed half-way
            if e.fault.effect == "hang":
                fake._stopping.wait(e.fault.hang_seconds)
                return 0
            if e.fault.effect == "drop":
                return 0
            half_closed = True
        except Exception as e:  # an injected fault (ApiError)
            return _refuse(h, getattr(e, "code", 500), getattr(e, "message", str(e)))
        if fake.get("pods", ns, pod) is None:
            return _refuse(h, 404, f'pods "{pod}" not found')
        key = h.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        offered = [p.strip() for p in h.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
        proto = "v4.channel.k8s.io" if "v4.channel.k8s.io" in offered else (offered[0] if offered else "")
        h.send_response(101, "Switching Protocols")
        h.send_header("Upgrade", "websocket")
        h.send_header("Connection", "Upgrade")
        h.send_header("Sec-WebSocket-Accept", accept)
        if proto:
            h.send_header("Sec-WebSocket-Protocol", proto)
        h.end_headers()
        container = (query.get("container") or [""])[-1]
        if half_closed:  # some output, then the stream ends without the command's status
            try:
                h.wfile.write(_frame(b"\x01" + b"checkpoint-"))
                h.wfile.flush()
            except OSError:
                pass
            return 101
        rc, out = run(ns, pod, container, list(query.get("command") or []))
        try:
            if out:
                h.wfile.write(_frame(b"\x01" + out))
            h.wfile.write(_frame(b"\x03" + _status(rc)))
            h.wfile.write(_frame(struct.pack("!H", 1000), opcode=0x8))
            h.wfile.flush()
        except OSError:
            pass
        return 101

    return serve

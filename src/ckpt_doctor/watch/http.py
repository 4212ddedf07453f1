"""The watcher's HTTP face: /metrics (Prometheus), /healthz (the process works), /readyz (it is watching)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry

from ckpt_doctor import listen
from ckpt_doctor.errors import UsageError
from ckpt_doctor.watch.metrics import exposition

Check = Callable[[], tuple[bool, str]]


def parse_listen(text: str) -> tuple[str, int]:
    """--listen as (host, port) (ckpt_doctor.listen.parse_listen); a UsageError naming the flag otherwise."""
    try:
        return listen.parse_listen(text)
    except ValueError as e:
        raise UsageError(f"--listen {e}") from None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False


class MetricsServer:
    def __init__(self, listen: str, registry: CollectorRegistry, healthy: Check, ready: Check) -> None:
        host, port = parse_listen(listen)
        server_cls = _Server
        if ":" in host:
            server_cls = type("_Server6", (_Server,), {"address_family": socket.AF_INET6})
        handler = _handler(registry, healthy, ready)
        try:
            self.httpd = server_cls((host, port), handler)
        except OSError as e:
            from ckpt_doctor.errors import InputError

            raise InputError(f"cannot listen on {listen}: {e.strerror or e}") from None
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                       name="ckpt-watch-http", daemon=True)  # fmt: skip

    @property
    def address(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"{host}:{port}"

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        if self.thread.ident is not None:  # shutdown() waits for serve_forever: only when it runs
            self.httpd.shutdown()
        self.httpd.server_close()


def _handler(registry: CollectorRegistry, healthy: Check, ready: Check) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # the watcher logs what matters itself
            pass

        def _send(self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                body, ctype = exposition(registry, self.headers.get("Accept", ""))
                self._send(200, body, ctype)
            elif path in ("/healthz", "/livez"):
                ok, why = healthy()
                self._send(200 if ok else 503, (why or "ok").encode() + b"\n")
            elif path == "/readyz":
                ok, why = ready()
                self._send(200 if ok else 503, (why or "ok").encode() + b"\n")
            elif path == "/":
                self._send(200, b"ckpt-doctor watch: /metrics /healthz /readyz\n")
            else:
                self._send(404, b"not found\n")

        do_HEAD = do_GET

    return Handler

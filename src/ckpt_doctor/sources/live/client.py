"""Talking to the cluster: kubeconfig like kubectl, one request with a timeout, errors as CallError.

The only module of ckpt-doctor that imports `kubernetes`, and only inside functions (it takes ~0.8 s
to import). Objects are read as raw JSON (no model classes), so every field the server sends is kept.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ckpt_doctor.errors import InputError
from ckpt_doctor.signals import request
from ckpt_doctor.sources.live.kinds import POD, Kind

PAGE = 500  # items per list page

IN_CLUSTER_NS = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


# -- connecting -------------------------------------------------------------------------------------


@dataclass
class Cluster:
    """A configured client for one cluster, and what kubectl would call its context."""

    client: Any  # kubernetes.client.ApiClient
    namespace: str
    context: str | None
    server: str
    timeout: float


def _kubeconfig_paths(kubeconfig: str | None) -> list[str]:
    if kubeconfig:
        return [kubeconfig]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [p for p in env.split(os.pathsep) if p]
    return [os.path.expanduser("~/.kube/config")]


def connect(
    namespace: str | None = None,
    context: str | None = None,
    kubeconfig: str | None = None,
    timeout: float = 15.0,
    pool: int = 16,
) -> Cluster:
    """Configure a client like kubectl: --kubeconfig, else $KUBECONFIG, else ~/.kube/config, else in-cluster.

    The namespace is -n, else the context's, else the in-cluster service account's, else `default`.
    """
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException
    from urllib3.util.retry import Retry

    cfg = client.Configuration()
    paths = _kubeconfig_paths(kubeconfig)
    existing = [p for p in paths if os.path.exists(p)]
    ctx_name: str | None = context
    ctx_ns: str | None = None
    if kubeconfig and not existing:
        raise InputError(f"kubeconfig {kubeconfig} does not exist")
    if existing:
        joined = os.pathsep.join(existing)
        try:
            contexts, active = config.list_kube_config_contexts(config_file=joined)
            chosen = active
            if context:
                chosen = next((c for c in contexts if c.get("name") == context), None)
                if chosen is None:
                    names = ", ".join(sorted(str(c.get("name")) for c in contexts)) or "none"
                    raise InputError(f"context {context!r} is not in the kubeconfig (contexts: {names})")
            ctx_name = str(chosen.get("name")) if chosen else context
            ctx_ns = ((chosen or {}).get("context") or {}).get("namespace")
            config.load_kube_config(config_file=joined, context=context, client_configuration=cfg, persist_config=False)
        except InputError:
            raise
        except Exception as e:  # ConfigException, YAML errors, a failing exec credential plugin
            raise InputError(f"cannot use the kubeconfig ({joined}): {e}") from None
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            config.load_incluster_config(client_configuration=cfg)
        except ConfigException as e:
            raise InputError(f"in-cluster configuration failed: {e}") from None
        ctx_name = "in-cluster"
        try:
            ctx_ns = Path(IN_CLUSTER_NS).read_text().strip() or None
        except OSError:
            ctx_ns = None
    else:
        raise InputError(
            f"no kubeconfig found ({', '.join(paths)}) and not running in a cluster; "
            "pass --kubeconfig or --context, or use --bundle PATH"
        )
    logging.getLogger("urllib3").setLevel(logging.ERROR)  # retries and full pools are ours to report
    cfg.retries = Retry(total=2, connect=2, read=0, status=0, other=0, redirect=2, backoff_factor=0.1)
    cfg.connection_pool_maxsize = max(4, pool)
    api = client.ApiClient(cfg)
    return Cluster(api, namespace or ctx_ns or "default", ctx_name, str(cfg.host), timeout)


# -- one request --------------------------------------------------------------------------------------


class CallError(Exception):
    """A request that failed; `kind` is forbidden | notfound | timeout | server | unreachable | bad | other."""

    def __init__(self, kind: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status


def _status_message(body: Any) -> str:
    try:
        doc = json.loads(body) if isinstance(body, str | bytes) else None
    except ValueError:
        doc = None
    if isinstance(doc, dict) and doc.get("message"):
        return str(doc["message"])
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    return text.strip()[:300]


def _call_error(e: BaseException, timeout: float) -> CallError:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import (
        HTTPError,
        MaxRetryError,
        NewConnectionError,
        ProtocolError,
        ReadTimeoutError,
    )
    from urllib3.exceptions import (
        TimeoutError as U3Timeout,
    )

    if isinstance(e, ApiException):
        status = int(e.status or 0)
        msg = _status_message(e.body) or str(e.reason or "")
        if status == 403:
            return CallError("forbidden", msg, status)
        if status == 401:
            return CallError("unauthorized", msg, status)
        if status == 404:
            return CallError("notfound", msg, status)
        if status in (400, 422):
            return CallError("bad", msg, status)
        if status == 410:
            return CallError("gone", msg, status)
        if status >= 500 or status == 429:
            return CallError("server", msg, status)
        if status == 0:
            return CallError("unreachable", msg or str(e), None)
        return CallError("other", msg, status)
    reason: BaseException = e
    if isinstance(e, MaxRetryError) and e.reason is not None:
        reason = e.reason
    if isinstance(reason, NewConnectionError | ConnectionError):  # NewConnectionError is a ConnectTimeoutError
        return CallError("unreachable", _short(reason))
    if isinstance(reason, ReadTimeoutError | U3Timeout | TimeoutError):
        return CallError("timeout", f"no answer within {timeout:g}s")
    if isinstance(reason, ProtocolError):
        return CallError("dropped", _short(reason))
    if isinstance(reason, HTTPError | OSError):
        return CallError("unreachable", _short(reason))
    return CallError("other", _short(reason))


def _short(e: BaseException) -> str:
    text = str(e)
    m = re.search(r"(\[Errno [^\]]+\][^'\")]*|Connection refused|Name or service not known|timed out)", text)
    return (m.group(1) if m else text)[:200]


class Api:
    """GET / list / watch / log on raw paths through the kubernetes ApiClient (auth, TLS, proxies)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.timeout = cluster.timeout

    def _raw(
        self,
        path: str,
        query: Sequence[tuple[str, Any]] = (),
        timeout: float | tuple[float, float] | None = None,
        stream: bool = False,
        method: str = "GET",
        body: dict[str, Any] | list[Any] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        with request():  # a signal's exception never lands inside the client's own code (ckpt_doctor/signals.py)
            return self._request(path, query, timeout, stream, method, body, content_type)

    def _request(
        self,
        path: str,
        query: Sequence[tuple[str, Any]],
        timeout: float | tuple[float, float] | None,
        stream: bool,
        method: str,
        body: dict[str, Any] | list[Any] | None,
        content_type: str,
    ) -> Any:
        headers = {"Accept": "application/json, */*"}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            resp = self.cluster.client.call_api(
                path,
                method,
                query_params=list(query),
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=timeout if timeout is not None else self.timeout,
            )
        except Exception as e:  # the client raises ApiException, urllib3 errors, OSError
            raise _call_error(e, self.timeout) from None
        if stream:
            return resp
        try:
            return resp.data
        except Exception as e:
            raise _call_error(e, self.timeout) from None
        finally:
            resp.release_conn()

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
        data = self._raw(kind.path(namespace, name))
        obj = _json(data)
        obj.setdefault("apiVersion", kind.api_version)
        obj.setdefault("kind", kind.kind)
        return obj

    def list(
        self,
        kind: Kind,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        """Every matching object (following `continue`), and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        rv = ""
        for page, page_rv in self.pages(kind, namespace, label_selector, field_selector):
            items.extend(page)
            rv = page_rv or rv
        return items, rv

    def pages(
        self,
        kind: Kind,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = PAGE,
    ) -> Iterator[tuple[list[dict[str, Any]], str]]:
        """The pages of a list (following `continue`), each with the resourceVersion it gave; built-in list
        items carry no apiVersion/kind: they are put first in each item."""
        cont: str | None = None
        while True:
            q: list[tuple[str, Any]] = [("limit", limit)]
            if label_selector:
                q.append(("labelSelector", label_selector))
            if field_selector:
                q.append(("fieldSelector", field_selector))
            if cont:
                q.append(("continue", cont))
            doc = _json(self._raw(kind.path(namespace), q))
            items = [{"apiVersion": kind.api_version, "kind": kind.kind, **it} for it in doc.get("items") or [] if
                     isinstance(it, dict)]  # fmt: skip
            meta = doc.get("metadata") or {}
            cont = meta.get("continue")
            yield items, str(meta.get("resourceVersion") or "")
            if not cont:
                return

    def watch(
        self,
        kind: Kind,
        namespace: str | None,
        resource_version: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        on_open: Callable[[Any], None] | None = None,
        on_close: Callable[[Any], None] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Watch events (`{type, object}`) from `resource_version`; ends when the server closes the stream."""
        q: list[tuple[str, Any]] = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", timeout_seconds),
        ]
        if label_selector:
            q.append(("labelSelector", label_selector))
        if field_selector:
            q.append(("fieldSelector", field_selector))
        resp = self._raw(kind.path(namespace), q, timeout=(self.timeout, timeout_seconds + self.timeout), stream=True)
        if on_open is not None:
            on_open(resp)
        try:
            for line in _lines(resp):
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if isinstance(ev, dict):
                    obj = ev.get("object")
                    if isinstance(obj, dict) and ev.get("type") != "ERROR":
                        ev["object"] = {"apiVersion": kind.api_version, "kind": kind.kind, **obj}
                    yield ev
        except Exception as e:
            raise _call_error(e, self.timeout) from None
        finally:
            _end_stream(resp)
            if on_close is not None:
                on_close(resp)

    def log(
        self,
        pod: str,
        namespace: str,
        container: str,
        previous: bool = False,
        limit_bytes: int | None = None,
        tail_lines: int | None = None,
    ) -> bytes:
        q: list[tuple[str, Any]] = [("container", container)]
        if previous:
            q.append(("previous", "true"))
        if limit_bytes is not None:
            q.append(("limitBytes", limit_bytes))
        if tail_lines is not None:
            q.append(("tailLines", tail_lines))
        return bytes(self._raw(POD.path(namespace, pod, "log"), q))

    def follow_log(
        self,
        pod: str,
        namespace: str,
        container: str,
        tail_lines: int | None = None,
        on_open: Callable[[Any], None] | None = None,
        on_close: Callable[[Any], None] | None = None,
    ) -> Iterator[bytes]:
        """Stream a running container's log (`follow=true`) until it exits or the stream is closed."""
        q: list[tuple[str, Any]] = [("container", container), ("follow", "true")]
        if tail_lines is not None:
            q.append(("tailLines", tail_lines))
        resp = self._raw(POD.path(namespace, pod, "log"), q, timeout=(self.timeout, 24 * 3600.0), stream=True)
        if on_open is not None:
            on_open(resp)
        try:
            yield from resp.stream(64 * 1024, decode_content=True)
        except Exception as e:
            raise _call_error(e, self.timeout) from None
        finally:
            _end_stream(resp)
            if on_close is not None:
                on_close(resp)

    def version(self) -> str:
        doc = _json(self._raw("/version"))
        return str(doc.get("gitVersion") or "")

    def access_review(self, verb: str, kind: Kind, namespace: str | None, sub: str | None = None) -> bool:
        """SelfSubjectAccessReview: may the current identity do `verb` on this resource?"""
        attrs = {"verb": verb, "group": kind.group, "resource": kind.plural}
        if sub:
            attrs["subresource"] = sub
        if kind.namespaced and namespace:
            attrs["namespace"] = namespace
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs},
        }
        doc = _json(self._raw("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", method="POST", body=body))
        return bool((doc.get("status") or {}).get("allowed"))

    # -- writes (only the drill writes; see drill/actions.py for who may be written) --------------------
    def served(self, group: str, version: str) -> set[str]:
        """The resource names (plurals, and plural/sub) a group version serves; CallError notfound if none."""
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        doc = _json(self._raw(path))
        return {str(r.get("name")) for r in doc.get("resources") or [] if isinstance(r, dict)}

    def create(self, kind: Kind, namespace: str | None, obj: dict[str, Any]) -> dict[str, Any]:
        return _json(self._raw(kind.path(namespace), method="POST", body=obj))

    def patch(
        self, kind: Kind, name: str, namespace: str | None, body: dict[str, Any] | list[Any], patch_type: str = "merge"
    ) -> dict[str, Any]:
        """A merge patch (RFC 7386) or, with patch_type="json", a JSON patch (RFC 6902)."""
        ctype = {"merge": "application/merge-patch+json", "json": "application/json-patch+json"}[patch_type]
        return _json(self._raw(kind.path(namespace, name), method="PATCH", body=body, content_type=ctype))

    def delete(self, kind: Kind, name: str, namespace: str | None, propagation: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation:
            body["propagationPolicy"] = propagation
        return _json(self._raw(kind.path(namespace, name), method="DELETE", body=body))

    def exec(self, pod: str, namespace: str, container: str, command: Sequence[str], timeout: float = 30.0) -> tuple[
        int | None, str
    ]:
        """Run `command` in a container (what `kubectl exec` does, over a WebSocket): (exit code, output).

        The exit code is None when the command had not ended within `timeout` seconds."""
        with request():
            return self._exec(pod, namespace, container, command, timeout)

    def _exec(self, pod: str, namespace: str, container: str, command: Sequence[str], timeout: float) -> tuple[
        int | None, str
    ]:
        from kubernetes import client
        from kubernetes.stream import stream

        # a client of its own: `stream` swaps the request function of the client it is given
        api = client.CoreV1Api(client.ApiClient(self.cluster.client.configuration))
        try:
            resp = stream(
                api.connect_get_namespaced_pod_exec,
                pod,
                namespace,
                container=container,
                command=list(command),
                stderr=True,
                stdin=False,
                stdout=True,
                tty=False,
                _preload_content=False,
                _request_timeout=self.timeout,
            )
        except Exception as e:  # a refused handshake may also surface as the client's own AttributeError
            raise _exec_error(e, self.timeout) from None
        try:
            resp.run_forever(timeout=timeout)
            out = (resp.read_stdout() or "") + (resp.read_stderr() or "")
            if resp.is_open():
                return None, out
            err = resp.read_channel(3) or ""
        except Exception as e:
            raise _call_error(e, self.timeout) from None
        finally:
            try:
                resp.close()
            except Exception:  # closing a stream the server already cut
                pass
        try:
            status_doc = json.loads(err) if err else {}
        except ValueError:
            status_doc = {}
        if not status_doc:  # the v4 channel protocol ends every command with its status: the stream was cut
            raise CallError("dropped", "the exec stream closed before the command's exit status arrived")
        if status_doc.get("status") == "Success":
            return 0, out
        causes = ((status_doc.get("details") or {}).get("causes")) or []
        code = next((c.get("message") for c in causes if isinstance(c, dict) and c.get("reason") == "ExitCode"), None)
        message = str(status_doc.get("message") or "")
        try:
            return (int(code) if code is not None else 126), out + ("" if code else message)
        except ValueError:
            return 126, out + message


def _exec_error(e: BaseException, timeout: float) -> CallError:
    """What a failed exec handshake was. The kubernetes client words a refused WebSocket upgrade as an
    ApiException "Handshake status 404 …", and for some refusals fails while wording it (an AttributeError whose
    context is that ApiException): the status is read from the exception or the one it happened in."""
    from kubernetes.client.exceptions import ApiException

    chain: list[BaseException] = []
    cur: BaseException | None = e
    while cur is not None and cur not in chain and len(chain) < 5:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    for x in chain:
        m = re.search(r"Handshake status (\d{3})", str(getattr(x, "reason", "") or "") + " " + str(x))
        if m:
            status = int(m.group(1))
            body = getattr(x, "body", None) or str(getattr(x, "reason", "") or x).rpartition("-+-+-")[2]
            msg = _status_message(body) or f"the exec handshake was answered {status}"
            kind = {401: "unauthorized", 403: "forbidden", 404: "notfound", 400: "bad", 422: "bad"}.get(status)
            if kind is None:
                kind = "server" if status >= 500 or status == 429 else "other"
            return CallError(kind, f"exec refused ({status}): {msg}", status)
    api_error = next((x for x in chain if isinstance(x, ApiException)), None)
    if api_error is not None and not api_error.status:
        return CallError("unreachable", _short(api_error))
    if api_error is not None:
        return _call_error(api_error, timeout)
    return _call_error(e, timeout)


def _end_stream(resp: Any) -> None:
    """Close a stream that may not have been read to its end (its connection cannot be reused), then free it."""
    try:
        resp.close()
    finally:
        resp.release_conn()


def _json(data: bytes | str) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise CallError("other", f"the server answered something that is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise CallError("other", "the server answered JSON that is not an object")
    return doc


def _lines(resp: Any) -> Iterator[bytes]:
    buf = b""
    for chunk in resp.stream(64 * 1024, decode_content=True):
        buf += chunk
        while True:
            i = buf.find(b"\n")
            if i < 0:
                break
            line, buf = buf[:i], buf[i + 1 :]
            if line.strip():
                yield line
    if buf.strip():
        yield buf


def kind_words(e: CallError) -> str:
    if e.kind == "server":
        return f"server error {e.status}"
    if e.kind == "unreachable":
        return "connection failed"
    return f"error {e.status}" if e.status else "error"


def gap_reason(e: CallError, verb: str, kind: Kind, namespace: str | None, name: str | None = None) -> str:
    """A `notCollected` reason: what failed, where, and why, in one line."""
    where = f"in {namespace}" if kind.namespaced and namespace else "at cluster scope"
    target = f"{kind.plural} {name}" if name else kind.plural
    if e.kind == "forbidden":
        return f"forbidden: cannot {verb} {target} {where}"
    if e.kind == "notfound":
        return f"not found: {kind.kind} {namespace + '/' if kind.namespaced and namespace else ''}{name or ''} (404)"
    if e.kind == "timeout":
        return f"timed out: {verb} {target} {where} ({e.message})"
    if e.kind == "unauthorized":
        return f"unauthorized: {verb} {target} {where}"
    return f"{kind_words(e)}: {verb} {target} {where}: {e.message}"

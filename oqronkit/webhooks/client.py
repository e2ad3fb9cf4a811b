"""The worker process's HTTP client: one pooled httpx client per process (per SSRF
stance), HTTP/1.1 keep-alive, no redirects followed, no proxy from the environment, hard
connect and total timeouts, and the response body read only up to what a run keeps."""

from __future__ import annotations

import ssl
import threading
import time
from dataclasses import dataclass

import certifi
import httpcore
import httpx

from .guard import GuardedBackend

KEPT_BODY_BYTES = 64 * 1024
POOL = httpx.Limits(max_connections=200, max_keepalive_connections=100, keepalive_expiry=30)
CONNECT_TIMEOUT_CAP = 5.0  # seconds: a connection that takes longer is as good as refused
_clients: dict[bool, httpx.Client] = {}
_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Answer:
    """What came back: the status, headers, the body's first bytes, and the time taken."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    truncated: bool
    duration_ms: int


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport over a connection pool whose network backend is the SSRF guard."""

    def __init__(self, *, allow_private: bool) -> None:
        super().__init__(trust_env=False, http1=True, http2=False, limits=POOL)
        context = ssl.create_default_context(cafile=certifi.where())
        self._pool = httpcore.ConnectionPool(
            ssl_context=context, max_connections=POOL.max_connections,
            max_keepalive_connections=POOL.max_keepalive_connections, keepalive_expiry=POOL.keepalive_expiry,
            http1=True, http2=False, network_backend=GuardedBackend(allow_private=allow_private))


def client(*, allow_private: bool) -> httpx.Client:
    """This process's client for endpoints that do (or do not) allow private targets."""
    found = _clients.get(allow_private)
    if found is None:
        with _lock:
            found = _clients.get(allow_private)
            if found is None:
                found = _clients[allow_private] = httpx.Client(
                    transport=GuardedTransport(allow_private=allow_private), follow_redirects=False,
                    trust_env=False, headers={"user-agent": "oqronkit-webhooks/1"})
    return found


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float, allow_private: bool) -> Answer:
    """POST ``body``; the answer once its body is read up to :data:`KEPT_BODY_BYTES`
    (the rest is not read: the connection is closed instead of drained). Raises httpx's
    errors (timeouts, connection errors) and the guard's TargetRefused. The whole
    exchange takes at most about ``timeout`` seconds: each read waits only for what is
    left of it."""
    started = time.monotonic()
    deadline = started + timeout
    limits = httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_CAP))
    with client(allow_private=allow_private).stream("POST", url, content=body, headers=headers,
                                                    timeout=limits) as response:
        kept = bytearray()
        truncated = False
        for chunk in response.iter_bytes():
            kept += chunk
            if len(kept) > KEPT_BODY_BYTES:
                truncated = True
                break
            if time.monotonic() > deadline:
                raise httpx.ReadTimeout(f"the response took longer than {timeout} s", request=response.request)
        return Answer(response.status_code, list(response.headers.multi_items()), bytes(kept[:KEPT_BODY_BYTES]),
                      truncated, round((time.monotonic() - started) * 1000))


def close_all() -> None:
    """Close this process's clients (tests; a forked child must not share its parent's sockets)."""
    with _lock:
        for found in _clients.values():
            found.close()
        _clients.clear()

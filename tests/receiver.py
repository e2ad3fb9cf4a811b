"""A real HTTP server on 127.0.0.1 for the webhook tests: each path answers from a
script of responses (status, headers, body, a delay before answering), then with its
default; every request is recorded with its headers, body and arrival time."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"ok"
    delay: float = 0.0  # seconds before answering (a slow or hanging receiver)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.time()


class Receiver:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.scripts: dict[str, list[Reply]] = {}
        self.defaults: dict[str, Reply] = {}
        self.received: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def script(self, path: str, *replies: Reply, default: Reply | None = None) -> None:
        with self.lock:
            self.scripts[path] = list(replies)
            if default is not None:
                self.defaults[path] = default

    def requests(self, path: str | None = None) -> list[Received]:
        with self.lock:
            return [r for r in self.received if path is None or r.path == path]

    def _next(self, path: str) -> Reply:
        with self.lock:
            script = self.scripts.get(path)
            if script:
                return script.pop(0)
            return self.defaults.get(path, Reply())

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the client pools connections

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                with receiver.lock:
                    receiver.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()},
                                                      body, time.time()))
                    receiver.in_flight += 1
                    receiver.max_in_flight = max(receiver.max_in_flight, receiver.in_flight)
                try:
                    reply = receiver._next(self.path)
                    if reply.delay:
                        time.sleep(reply.delay)
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
                    pass
                finally:
                    with receiver.lock:
                        receiver.in_flight -= 1

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler

    def serve(self) -> None:
        self.server.serve_forever(poll_interval=0.05)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def receiving() -> Iterator[Receiver]:
    receiver = Receiver()
    thread = threading.Thread(target=receiver.serve, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.close()
        thread.join(5)

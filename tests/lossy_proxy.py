"""A TCP proxy on loopback that loses one reply: put between a client and a PRIVATE
server (never the shared one), it forwards everything until a request holding a marker
(a Lua script's SHA) goes by, lets the server run it (or, ``forward=False``, swallows
it), then closes every connection before the reply reaches the client and refuses
service (accepts, then closes) for ``down_for`` seconds: what a master killed after
running a script (or before its replica got it), or a dropped link, looks like to the
client. ``back_at`` is when it serves again (monotonic seconds)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class LossyProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._marker: bytes | None = None
        self._down_for = 0.0
        self._forward = True
        self._cut: socket.socket | None = None  # the client whose reply is to be lost
        self.down_until = 0.0
        self.back_at: float | None = None
        self.dropped = 0
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def drop_reply(self, marker: bytes, *, down_for: float = 1.0, forward: bool = True) -> None:
        """Lose the reply of the next request holding ``marker`` (and the request itself
        unless ``forward``)."""
        with self._lock:
            self._marker, self._down_for, self._forward = marker, down_for, forward

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        self._close_all()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if time.monotonic() < self.down_until:
                client.close()  # "Connection closed by server", as a dying node
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, server))
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, upstream: bool) -> None:
        client = source if upstream else sink
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            if upstream:
                with self._lock:
                    hit = self._marker is not None and self._marker in data
                    if hit:
                        self._marker, self._cut = None, client
                if hit and not self._forward:
                    self._lose()
                    break
            elif self._cut is client:  # the server ran it and answered: the answer is lost
                self._lose()
                break
            try:
                sink.sendall(data)
            except OSError:
                break
        with contextlib.suppress(OSError):
            source.close()
        with contextlib.suppress(OSError):
            sink.close()

    def _lose(self) -> None:
        with self._lock:
            self._cut = None
            self.dropped += 1
            self.down_until = time.monotonic() + self._down_for
            self.back_at = self.down_until
        self._close_all()

    def _close_all(self) -> None:
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()

"""The demo's webhook receiver: a tiny HTTP server on 127.0.0.1 (loopback only) that
``bin/demo`` starts beside the worker, so the demo webhook has endpoints to deliver to.

- ``/ok``: answers 200 at once, with a small JSON body;
- ``/flaky``: slow-ish, answers 500 with an HTML error page about one time in three
  (retries, failures on the Webhooks page, response bodies shown as escaped text).

``python -m demo.receiver [port]`` (default :data:`DEFAULT_PORT`, or ``OQRON_DEMO_RECEIVER_PORT``).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOST = "127.0.0.1"  # never another interface: the demo sends nothing off the machine
DEFAULT_PORT = 8765
ERROR_PAGE = b"<html><body><h1>500</h1><script>alert('from the receiver')</script></body></html>"


def port() -> int:
    return int(os.environ.get("OQRON_DEMO_RECEIVER_PORT", DEFAULT_PORT))


def url(path: str) -> str:
    return f"http://{HOST}:{port()}{path}"


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(min(length, 1 << 20))
        if self.path == "/flaky":
            time.sleep(random.uniform(0.05, 0.4))
            if random.random() < 0.35:
                self._answer(500, "text/html", ERROR_PAGE)
                return
        body = json.dumps({"received": self.headers.get("webhook-id"), "at": time.time()}).encode()
        self._answer(200, "application/json", body)

    def _answer(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet: the board shows every request
        return


def main(argv: list[str]) -> None:
    server = ThreadingHTTPServer((HOST, int(argv[1]) if len(argv) > 1 else port()), Handler)
    server.daemon_threads = True
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main(sys.argv)

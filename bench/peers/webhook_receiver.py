"""A fast local webhook receiver for bench/webhooks.py: asyncio, HTTP/1.1 keep-alive,
``200 ok`` to every request, on 127.0.0.1. Prints its port, then serves until killed."""

from __future__ import annotations

import asyncio
import sys

REPLY = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-type: text/plain\r\n\r\nok"


class Receiver(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            length = 0
            for line in self.buffer[:head_end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            end = head_end + 4 + length
            if len(self.buffer) < end:
                return
            self.buffer = self.buffer[end:]
            self.transport.write(REPLY)  # type: ignore[attr-defined]


async def main() -> None:
    server = await asyncio.get_running_loop().create_server(Receiver, "127.0.0.1", int(sys.argv[1]) if
                                                            len(sys.argv) > 1 else 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())

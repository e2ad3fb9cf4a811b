"""The floor of ``bench/pubsub.py``'s delivery phase: Redis Streams used directly.

One process; per consumer group ``--concurrency`` threads, each a consumer of its own
name looping on ``XREADGROUP GROUP <group> <name> COUNT <count> BLOCK 1000 STREAMS
<stream> >``, running the queue benchmarks' task body (``common.complete``: one Redis
``INCR``) for every entry it got, then one ``XACK`` of those entries. No durable log, no
run records, no retries: what the same deliveries cost on the bare server.

Usage: ``python streams_consumer.py --stream KEY --groups a,b --concurrency 5 --count 50``
with ``BENCH_REDIS_URL``, ``BENCH_KEY`` and ``BENCH_TARGET`` set; stops on SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading

import redis
from common import complete


def consume(url: str, stream: str, group: str, name: str, count: int, stop: threading.Event) -> None:
    r = redis.Redis.from_url(url)
    while not stop.is_set():
        got = r.xreadgroup(group, name, {stream: ">"}, count=count, block=1000)
        if not got:
            continue
        entries = got[0][1]
        for _entry_id, fields in entries:
            complete(json.loads(fields[b"payload"]))
        r.xack(stream, group, *[entry_id for entry_id, _ in entries])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stream", required=True)
    parser.add_argument("--groups", default="a,b")
    parser.add_argument("--concurrency", type=int, default=5, help="consumer threads per group")
    parser.add_argument("--count", type=int, default=50, help="entries per XREADGROUP")
    args = parser.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    threads = [threading.Thread(target=consume, args=(os.environ["BENCH_REDIS_URL"], args.stream, group,
                                                      f"{group}-{i}", args.count, stop), daemon=True)
               for group in args.groups.split(",") for i in range(args.concurrency)]
    for thread in threads:
        thread.start()
    while not stop.wait(0.2):
        pass
    for thread in threads:
        thread.join(timeout=5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

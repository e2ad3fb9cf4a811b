"""bench/webhooks.py's floor: N POSTs of a webhook-sized JSON body to URL through one
pooled httpx client, CONCURRENCY threads, no bookkeeping. Prints JSON {"seconds": ...}.

Usage: httpx_floor.py URL N CONCURRENCY"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time

import httpx


def main() -> None:
    url, n, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    client = httpx.Client(limits=limits, trust_env=False, follow_redirects=False, timeout=10)
    numbers = itertools.count()
    failures: list[int] = []

    def loop() -> None:
        while (i := next(numbers)) < n:
            body = json.dumps({"type": "order.paid", "timestamp": "2026-01-01T00:00:00.000Z",
                               "data": {"i": i, "to": f"user-{i}@example.com"}}, separators=(",", ":"))
            status = client.post(url, content=body, headers={"content-type": "application/json"}).status_code
            if status != 200:
                failures.append(status)

    threads = [threading.Thread(target=loop) for _ in range(concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "failures": len(failures)}))


if __name__ == "__main__":
    main()

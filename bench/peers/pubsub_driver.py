"""The producer side of ``bench/pubsub.py``: our topic and queues, and Redis Streams used
directly, behind one command line. Prints one JSON line per command. Only the publish
calls are timed; imports, connections and the topic's declaration happen before.

Commands (``OQRON_*`` variables configure our engine, ``BENCH_*`` the counter and Redis)::

    publish --mode many|single --n N [--chunk 1000] [--warmup 1000]  # topic.publish_many / publish
    xadd --mode many|single --n N --stream KEY [--chunk 1000]   # pipelined / one XADD per call
    prepublish --n N [--chunk 1000]                    # N messages for a delivery phase
    prestream --n N --stream KEY --groups a,b          # N entries and the groups, at 0
    enqueue --n N --queues q1,q2 [--chunk 1000]        # add_bulk N jobs into each queue
    latency --target topic|stream --n N --gap S [--stream KEY]
    verify [--queues q1,q2]                            # what a phase left in our engine
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from typing import Any

from common import client, keys, payload

ENTRY_FIELD = "payload"  # a stream entry's one field: the payload as JSON


def engine_side() -> Any:
    """pubsub_app, with both planes open and the topic declared (one warm-up message)."""
    import pubsub_app

    from oqronkit import get_engine

    engine = get_engine()
    engine.durable  # noqa: B018
    engine.hot  # noqa: B018
    return pubsub_app


def timed(fn: Any, n: int) -> dict[str, Any]:
    began = time.perf_counter()
    fn()
    seconds = time.perf_counter() - began
    return {"n": n, "seconds": seconds, "rate": n / seconds}


def chunks(n: int, chunk: int, start: int = 0) -> list[list[dict[str, Any]]]:
    return [[payload(i) for i in range(first, min(first + chunk, start + n))]
            for first in range(start, start + n, chunk)]


def logged(app: Any) -> int:
    """Messages in the topic's log (every partition)."""
    from oqronkit import get_engine
    from oqronkit.topics import log

    return sum(log.next_offsets(get_engine().durable, app.TOPIC, app.PARTITIONS))


def analyze() -> None:
    """ANALYZE the durable plane's database (Postgres modes, unless ``BENCH_ANALYZE=0``):
    planner statistics as autovacuum keeps them in a running deployment."""
    url = os.environ.get("OQRON_DATABASE_URL", "")
    if url.startswith("postgres") and os.environ.get("BENCH_ANALYZE", "1") == "1":
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")


def cmd_publish(args: argparse.Namespace) -> dict[str, Any]:
    app = engine_side()
    # Declares the topic; then statistics over a log that is not empty (see bench/README.md:
    # on a never-analyzed oqron_runs the append's duplicate check walks the whole log).
    app.events.publish_many([payload(-1 - i) for i in range(args.warmup)])
    analyze()
    batches = chunks(args.n, args.chunk)
    if args.mode == "many":
        def run() -> None:
            for batch in batches:
                app.events.publish_many(batch)
    else:
        def run() -> None:
            for batch in batches:
                for item in batch:
                    app.events.publish(item)
    result = timed(run, args.n)
    result["logged"] = logged(app) - args.warmup
    return result


def cmd_xadd(args: argparse.Namespace) -> dict[str, Any]:
    r = client()
    r.ping()
    encoded = [[json.dumps(p) for p in batch] for batch in chunks(args.n, args.chunk)]
    if args.mode == "many":
        def run() -> None:
            for batch in encoded:
                pipe = r.pipeline(transaction=False)
                for text in batch:
                    pipe.xadd(args.stream, {ENTRY_FIELD: text})
                pipe.execute()
    else:
        def run() -> None:
            for batch in encoded:
                for text in batch:
                    r.xadd(args.stream, {ENTRY_FIELD: text})
    result = timed(run, args.n)
    result["logged"] = r.xlen(args.stream)
    return result


def cmd_prepublish(args: argparse.Namespace) -> dict[str, Any]:
    app = engine_side()
    batches = chunks(args.n, args.chunk)

    def run() -> None:
        for batch in batches:
            app.events.publish_many(batch)
    result = timed(run, args.n)
    result["logged"] = logged(app)
    return result


def cmd_prestream(args: argparse.Namespace) -> dict[str, Any]:
    r = client()
    encoded = [[json.dumps(p) for p in batch] for batch in chunks(args.n, args.chunk)]

    def run() -> None:
        for batch in encoded:
            pipe = r.pipeline(transaction=False)
            for text in batch:
                pipe.xadd(args.stream, {ENTRY_FIELD: text})
            pipe.execute()
    result = timed(run, args.n)
    for group in args.groups.split(","):
        r.xgroup_create(args.stream, group, id="0", mkstream=True)
    result["logged"] = r.xlen(args.stream)
    return result


def cmd_enqueue(args: argparse.Namespace) -> dict[str, Any]:
    app = engine_side()
    queues = [q for q in app.reference.values() if q.name in args.queues.split(",")]
    batches = chunks(args.n, args.chunk)

    def run() -> None:
        for queue in queues:
            for batch in batches:
                queue.add_bulk(batch)
    return timed(run, args.n * len(queues))


def cmd_latency(args: argparse.Namespace) -> dict[str, Any]:
    """One warm-up message (every group runs it, so the consumers are up and idle), then
    ``n`` stamped messages ``gap`` apart; each delivery pushes ``start - publish time``."""
    if args.target == "topic":
        app = engine_side()
        publish = app.events.publish
        groups = len(app.GROUPS)
    else:
        r = client()

        def publish(data: dict[str, Any]) -> Any:
            return r.xadd(args.stream, {ENTRY_FIELD: json.dumps(data)})
        groups = len(args.groups.split(","))
    done = keys(os.environ["BENCH_KEY"])["done"]
    publish(payload(-1))
    deadline = time.monotonic() + args.warm_timeout
    while int(client().get(done) or 0) < groups:
        if time.monotonic() > deadline:
            raise SystemExit(f"latency warm-up: no delivery within {args.warm_timeout:.0f} s")
        time.sleep(0.01)
    time.sleep(0.5)  # back to idle
    began = time.perf_counter()
    for i in range(args.n):
        publish(payload(i, stamp=True))
        pause = began + (i + 1) * args.gap - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
    return {"n": args.n}


def cmd_verify(args: argparse.Namespace) -> dict[str, Any]:
    """Runs per queue (completed, distinct jobs), jobs and dead letters left, and each
    group's lag, read through the engine (every mode alike)."""
    from oqronkit import get_engine
    from oqronkit.namespaces import RUNS

    app = engine_side()
    durable = get_engine().durable
    runs: Counter[str] = Counter()
    completed: Counter[str] = Counter()
    jobs: dict[str, set[str]] = {}
    cursor = None
    while True:
        page = durable.list(RUNS, limit=1000, cursor=cursor)
        for record in page.records:
            queue = str(record.value.get("name"))
            runs[queue] += 1
            completed[queue] += record.value.get("status") == "completed"
            jobs.setdefault(queue, set()).add(str(record.value.get("jobId")))
        cursor = page.next_cursor
        if cursor is None:
            break
    out: dict[str, Any] = {"runs": dict(runs), "completed": dict(completed),
                           "jobs": {q: len(ids) for q, ids in jobs.items()},
                           "left": durable.count(kind="job") + durable.count(kind="dlq")}
    if args.topic:
        out["lag"] = {g: app.events.lag(g) for g in app.GROUPS}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("publish")
    p.add_argument("--mode", choices=["many", "single"], required=True)
    p.add_argument("--warmup", type=int, default=1000, help="messages published (untimed) before the timed ones")
    x = sub.add_parser("xadd")
    x.add_argument("--mode", choices=["many", "single"], required=True)
    x.add_argument("--stream", required=True)
    pre = sub.add_parser("prepublish")
    ps = sub.add_parser("prestream")
    ps.add_argument("--stream", required=True)
    ps.add_argument("--groups", default="a,b")
    e = sub.add_parser("enqueue")
    e.add_argument("--queues", required=True)
    for each in (p, x, pre, ps, e):
        each.add_argument("--n", type=int, required=True)
        each.add_argument("--chunk", type=int, default=1000)
    lat = sub.add_parser("latency")
    lat.add_argument("--target", choices=["topic", "stream"], required=True)
    lat.add_argument("--n", type=int, default=100)
    lat.add_argument("--gap", type=float, default=0.02)
    lat.add_argument("--stream", default=None)
    lat.add_argument("--groups", default="a,b")
    lat.add_argument("--warm-timeout", type=float, default=60.0)
    v = sub.add_parser("verify")
    v.add_argument("--topic", action="store_true", help="also each group's lag")
    args = parser.parse_args()
    commands = {"publish": cmd_publish, "xadd": cmd_xadd, "prepublish": cmd_prepublish, "prestream": cmd_prestream,
                "enqueue": cmd_enqueue, "latency": cmd_latency, "verify": cmd_verify}
    result = commands[args.command](args)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    if args.command in ("publish", "prepublish", "enqueue", "verify") or getattr(args, "target", None) == "topic":
        from oqronkit import get_engine

        get_engine().close()


if __name__ == "__main__":
    main()

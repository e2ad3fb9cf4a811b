"""Tracked bulk operations against the capped immediate path they replace, on Postgres.

    .venv/bin/python bench/bulk_operations.py [--count 5000] [--repeat 3]
        [--database-url postgresql://postgres@127.0.0.1:5432/test]

Per run and action (retry, delete), ``--count`` dead letters are seeded with one SQL
statement (bench/bulk_seed.sql) into a fresh project, then taken by either

* ``immediate`` -- today's "all matching" path: the ids listed, then ``retry_many`` /
  ``delete_dead`` in requests of at most 1,000 (the board's and the CLI's cap);
* ``operation`` -- one tracked operation run to the end by the leader's runner.

The two are interleaved run by run; the table prints the median time per 1,000 dead
letters and the ratio immediate / operation (above 1: the operation is faster). Postgres
in a private schema, dropped afterwards. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oqronkit import Engine, OqronConfig, Registry
from oqronkit.audit import ACTION_CAP
from oqronkit.clock import now_ms
from oqronkit.namespaces import dlq_namespace
from oqronkit.operations import OperationRunner, Operations

DEFAULT_URL = os.environ.get("OQRON_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
SEED = (Path(__file__).with_name("bulk_seed.sql")).read_text()
TEMPLATE = {"data": {"n": 1}, "lifo": False, "tags": [], "runAt": None, "errors": [], "stalls": 0, "status": "dead",
            "attempts": 4, "priority": 0, "dependsOn": [], "dependents": [], "maxAttempts": 4,
            "lastError": {"type": "RuntimeError", "message": "card declined"}, "deadReason": "retries exhausted",
            "errorFingerprint": "f00d", "pendingDependencies": []}
QUEUE = "bulk"


def seed(engine: Engine, url: str, count: int) -> None:
    import psycopg

    engine.durable.count(dlq_namespace(QUEUE))  # the engine creates its tables first
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(SEED, {"project": engine.config.project, "environment": engine.config.environment,
                            "namespace": dlq_namespace(QUEUE), "queue": QUEUE, "template": json.dumps(TEMPLATE),
                            "at": now_ms() - 1000, "count": count})


def immediate(engine: Engine, action: str) -> None:
    queue = engine.controller(QUEUE) if QUEUE in engine.registry.queues else engine.queue(QUEUE)
    while ids := [id for id, _ in engine.durable.scan_statuses_page(dlq_namespace(QUEUE), ("dead",), cursor=None,
                                                                    page=ACTION_CAP)[0]]:
        if action == "retry":
            queue.retry_many(ids)
        else:
            queue.delete_dead(ids)


def operation(engine: Engine, action: str) -> None:
    op = Operations(engine).create(action, user="bench", queue=QUEUE)
    OperationRunner(engine, owner="bench").drain()
    assert Operations(engine).get(op.id).status == "done"


def timed(url: str, count: int, action: str, way: Callable[[Engine, str], None]) -> float:
    engine = Engine(OqronConfig(mode="postgres", database_url=url, project=f"bench-{uuid.uuid4().hex[:8]}"),
                    registry=Registry())
    try:
        seed(engine, url, count)
        started = time.perf_counter()
        way(engine, action)
        elapsed = time.perf_counter() - started
        assert engine.durable.count(dlq_namespace(QUEUE)) == 0
        return elapsed
    finally:
        engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000, help="dead letters per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each (interleaved)")
    parser.add_argument("--database-url", default=DEFAULT_URL)
    args = parser.parse_args()
    import psycopg

    schema = f"bench_bulk_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(args.database_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')  # our generated name
    url = f"{args.database_url}{'&' if '?' in args.database_url else '?'}options=-csearch_path%3D{schema}"
    try:
        print(f"{args.count:,} dead letters per run, median of {args.repeat} interleaved runs")
        print(f"{'action':8} {'immediate s/1k':>15} {'operation s/1k':>15} {'immediate/operation':>20}")
        for action in ("delete", "retry"):
            times: dict[str, list[float]] = {"immediate": [], "operation": []}
            for _ in range(args.repeat):
                times["immediate"].append(timed(url, args.count, action, immediate))
                times["operation"].append(timed(url, args.count, action, operation))
            per_k = {way: statistics.median(t) * 1000 / args.count for way, t in times.items()}
            print(f"{action:8} {per_k['immediate']:15.3f} {per_k['operation']:15.3f} "
                  f"{per_k['immediate'] / per_k['operation']:20.2f}")
    finally:
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


if __name__ == "__main__":
    main()

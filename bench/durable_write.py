"""Durable-plane write throughput: run-shaped records through every durable backend.

    .venv/bin/python bench/durable_write.py [--records 100000] [--single 5000]
        [--batch 1000] [--repeat 3] [--backends memory,sqlite,postgres]
        [--database-url postgresql://postgres@127.0.0.1:5432/test]

Each backend is driven through ``oqronkit.DurablePlane`` (the facade the engine uses,
so JSON encoding and size checks are part of the cost). Two modes per backend:

* ``single``  -- one ``put`` per record (``--single`` records; fewer than batched,
  because a per-record round trip is slow on a real database);
* ``batched`` -- ``put_many`` in batches of ``--batch`` records (``--records`` total).

SQLite writes to a fresh temporary file; Postgres to a private schema created for the
run and dropped afterwards. Each figure is the median of ``--repeat`` runs, each run
starting from empty tables. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oqronkit import DurablePlane, RecordWrite
from oqronkit.namespaces import RUNS

DEFAULT_URL = os.environ.get("OQRON_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
STATUSES = ("completed",) * 7 + ("failed", "running", "cancelled")
BASE_MS = 1_751_587_200_000


def run_record(i: int, *, run_tag: str) -> dict[str, Any]:
    """A realistic run record (docs/explanation/storage-model.md, the run record), about 1 KB of JSON."""
    started = BASE_MS + i * 1_000
    status = STATUSES[i % len(STATUSES)]
    failed = status == "failed"
    return {
        "id": f"run-{run_tag}-{i:07d}",
        "name": ("emails", "reports", "billing", "thumbnails")[i % 4],
        "module": ("queue", "cron", "schedule", "webhook", "worker")[i % 5],
        "status": status,
        "trigger": "queue",
        "input": {"to": f"user{i}@example.com", "template": "welcome", "locale": "en-GB"},
        "output": None if failed else {"delivered": True, "messageId": f"msg-{i:09d}"},
        "attempts": 1 + (i % 3),
        "progressPercent": 100 if status == "completed" else 40,
        "logs": [
            {"level": "info", "msg": "rendering template welcome", "ts": started + 5},
            {"level": "info", "msg": "sending through smtp relay eu-west-1", "ts": started + 120},
            {"level": "error" if failed else "info", "msg": "relay answered 250 OK", "ts": started + 480},
        ],
        "timeline": [
            {"ts": started, "from": "waiting", "to": "running", "reason": "claimed"},
            {"ts": started + 500, "from": "running", "to": status, "reason": "handler returned"},
        ],
        "error": {"message": "SMTP 451 try again later", "type": "TransientError"} if failed else None,
        "app": "bench-app",
        "environment": "bench",
        "workerId": "node-7f9c2d1e-5b1a-4c1e-9a7e-0d8c6b4e3f21",
        "startedAt": started,
        "endedAt": started + 500,
        "durationMs": 500,
    }


@contextmanager
def memory_store() -> Iterator[Any]:
    from oqronkit.backends.memory import MemoryDurableStore

    yield MemoryDurableStore()


@contextmanager
def sqlite_store() -> Iterator[Any]:
    from oqronkit.backends.sqlite import SQLiteDurableStore

    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteDurableStore(str(Path(folder) / "bench.sqlite3"))
        try:
            yield store
        finally:
            store.close()


def postgres_store(url: str) -> Callable[[], Any]:
    @contextmanager
    def factory() -> Iterator[Any]:
        import psycopg

        from oqronkit.backends.postgres import PostgresDurableStore

        schema = f"oqron_bench_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')  # our own generated name
        sep = "&" if "?" in url else "?"
        store = PostgresDurableStore(f"{url}{sep}options=-csearch_path%3D{schema}")
        try:
            yield store
        finally:
            store.close()
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

    return factory


def timed_run(factory: Callable[[], Any], mode: str, count: int, batch: int) -> float:
    """Records per second of one run on fresh tables (record building not timed)."""
    with factory() as store:
        plane = DurablePlane(store, project="bench", environment="bench")
        plane.start()
        tag = uuid.uuid4().hex[:6]
        records = [run_record(i, run_tag=tag) for i in range(count)]
        started = time.perf_counter()
        if mode == "single":
            for value in records:
                plane.put(RUNS, value["id"], value)
        else:
            for start in range(0, count, batch):
                plane.put_many(RecordWrite(RUNS, v["id"], v) for v in records[start:start + batch])
        elapsed = time.perf_counter() - started
        assert plane.count(RUNS) == count, "every record must be stored"
        return count / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000, help="records per batched run")
    parser.add_argument("--single", type=int, default=5_000, help="records per single-put run")
    parser.add_argument("--batch", type=int, default=1_000, help="records per put_many call")
    parser.add_argument("--repeat", type=int, default=1, help="runs per figure (median reported)")
    parser.add_argument("--backends", default="memory,sqlite,postgres")
    parser.add_argument("--database-url", default=DEFAULT_URL)
    args = parser.parse_args(argv)

    factories: dict[str, Callable[[], Any]] = {
        "memory": memory_store, "sqlite": sqlite_store, "postgres": postgres_store(args.database_url),
    }
    print(f"{'backend':<10} {'mode':<8} {'records':>9} {'records/s':>12}   (median of {args.repeat})")
    for name in args.backends.split(","):
        for mode, count in (("single", args.single), ("batched", args.records)):
            try:
                rates = [timed_run(factories[name], mode, count, args.batch) for _ in range(args.repeat)]
            except Exception as exc:  # report and carry on with the other backends
                print(f"{name:<10} {mode:<8} {count:>9} {'failed':>12}   {exc.__class__.__name__}: {exc}")
                continue
            print(f"{name:<10} {mode:<8} {count:>9} {statistics.median(rates):>12,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

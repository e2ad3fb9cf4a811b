"""Seed the board benchmark's Postgres database: 1,000,000 runs, 200,000 jobs and
1,000,000 retained messages across 20 topics.

    .venv/bin/python bench/seed.py [--database-url URL] [--runs 1000000] [--jobs 200000]
        [--messages 1000000] [--topics 20] [--reseed]

``bench/board_pages.py`` calls :func:`ensure_seeded` itself; this entry point only seeds.

Every row goes through the engine's durable plane (``oqronkit.open_durable`` and
``put_many`` in batches of 5,000), so the rows are exactly what the engine would have
written; waiting and delayed jobs are also signalled in the hot plane, so the queue
depths the board reads from it are real. The data looks like a busy production app:

* runs: mostly ``completed``, about 5 % ``failed`` (each failure carries one of a few
  recurring errors, with a traceback), a few cancelled, and the active jobs' runs
  still ``running``; ``startedAt`` spread over the last 7 days, 40 % of them in the
  last 24 hours;
* jobs: 10 % dead letters (with error history and a fingerprint, so the DLQ page has
  a handful of fingerprint groups), the rest a waiting / delayed / active backlog,
  spread over six queues.

The topics, their consumer groups, deliveries and dead letters are
``bench/topic_seed.py``'s (seeded after the runs and jobs, with a marker of their own).

A marker record (namespace ``bench``) remembers what was seeded and when: a later
call reuses the data unless ``--reseed`` is given, the sizes differ, or the seed is
more than a day old (then the "last 24 h" windows would be nearly empty).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import oqronkit
from oqronkit import DurablePlane, Job, OqronConfig, RecordWrite
from oqronkit.backends.hot_types import Signal
from oqronkit.namespaces import RUNS

DEFAULT_URL = os.environ.get("OQRON_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/oqron_board_bench")
PROJECT = "bench"
ENVIRONMENT = "production"
BATCH = 5_000
MARKER = ("bench", "board_pages")
SEED_VERSION = 1
STALE_AFTER_MS = 24 * 3600 * 1000
DAY_MS = 24 * 3600 * 1000
HOT_TABLES = ("oqron_hot_jobs", "oqron_hot_locks", "oqron_hot_counters", "oqron_hot_kv")
DURABLE_TABLES = ("oqron_runs", "oqron_jobs", "oqron_records")

# Queue name -> share of the traffic.
QUEUES = {"emails": 0.35, "thumbnails": 0.20, "billing": 0.15, "webhooks": 0.15, "reports": 0.10, "imports": 0.05}
CRONS = ("nightly-cleanup", "hourly-rollup", "refresh-exchange-rates")
WORKERS = [f"app-{n}-{1000 + n * 37}-{n * 0x1f3a:06x}" for n in range(1, 9)]

# Recurring failures per queue: (exception type, message template). After the engine's
# normalisation (numbers, quoted strings, hex and uuids become placeholders) each
# template is one fingerprint group on the DLQ page.
ERRORS: dict[str, list[tuple[str, str]]] = {
    "emails": [
        ("SMTPServerDisconnected", "Connection unexpectedly closed by relay eu-west-{n}"),
        ("TransientError", "SMTP 451 4.7.1 try again later (queue id {hex})"),
        ("ValueError", "invalid recipient address 'user{n}@example'"),
    ],
    "thumbnails": [
        ("UnidentifiedImageError", "cannot identify image file '/tmp/upload-{uuid}.jpg'"),
        ("Timeout", "timed out after {n} ms"),
    ],
    "billing": [
        ("CardDeclined", "card declined for customer 'cus_{hex}' (code {n})"),
        ("TimeoutError", "payment gateway did not answer within {n} ms"),
    ],
    "webhooks": [
        ("HTTPError", "POST https://hooks.example.com/endpoint/{n} answered 502 Bad Gateway"),
        ("ConnectionError", "connection refused by 10.0.{n}.7:443"),
    ],
    "reports": [
        ("MemoryError", "report {n} needed more than 512 MB"),
        ("KeyError", "'region'"),
    ],
    "imports": [("CSVError", "row {n}: expected 12 fields, saw {m}")],
}


@dataclass
class SeedPlan:
    """Sizes of one seed: runs, jobs and the share of dead letters among the jobs."""

    runs: int = 1_000_000
    jobs: int = 200_000
    dead_share: float = 0.10
    failed_share: float = 0.05
    now: int = field(default_factory=lambda: int(time.time() * 1000))

    @property
    def dead(self) -> int:
        return int(self.jobs * self.dead_share)

    @property
    def active(self) -> int:
        return min(600, self.jobs // 200)

    @property
    def delayed(self) -> int:
        return (self.jobs - self.dead) // 10


@dataclass
class SeedSummary:
    """What is in the database after seeding (ids the page bench needs)."""

    seeded_at: int
    runs: int
    jobs: int
    dead: int
    queues: list[str]
    sample_failed_run: str
    sample_running_run: str
    sample_dead_job: str
    sample_dead_queue: str
    sample_waiting_job: str
    sample_fingerprint: str
    sample_waiting_queue: str = ""
    reused: bool = False

    def to_value(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "reused"} | {"version": SEED_VERSION}


# -- value builders ------------------------------------------------------------------


def _hex(rng: random.Random, digits: int) -> str:
    return f"{rng.getrandbits(digits * 4):0{digits}x}"


def _uuid(rng: random.Random) -> str:
    h = _hex(rng, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def run_id(rng: random.Random, started: int) -> str:
    """An id shaped like ``oqronkit.ids.new_id``: 12 hex digits of ms time + 14 random."""
    return f"{started:012x}{_hex(rng, 14)}"


def pick_queue(rng: random.Random) -> str:
    return rng.choices(list(QUEUES), weights=list(QUEUES.values()))[0]


def started_at(rng: random.Random, now: int) -> int:
    """40 % in the last 24 h, the rest over the 6 days before."""
    if rng.random() < 0.40:
        return now - int(rng.random() * DAY_MS)
    return now - DAY_MS - int(rng.random() * 6 * DAY_MS)


def make_error(rng: random.Random, queue: str, at: int, *, which: int | None = None) -> dict[str, Any]:
    """One of the queue's recurring errors, with volatile parts filled in and a traceback."""
    options = ERRORS[queue]
    kind, template = options[which % len(options)] if which is not None else rng.choice(options)
    message = template.format(n=rng.randint(1, 99_999), m=rng.randint(1, 30), hex=_hex(rng, 14), uuid=_uuid(rng))
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/app/oqronkit/worker/executor.py", line 61, in _run\n    output = inflight.queue.fn(ctx)\n'
        f'  File "/app/shop/tasks/{queue}.py", line {rng.randint(20, 400)}, in handle\n'
        f"    result = client.call(ctx.data)\n{kind}: {message}\n"
    )
    return {"type": kind, "message": message, "traceback": traceback, "ts": at}


def job_data(rng: random.Random, queue: str, i: int) -> dict[str, Any]:
    """A payload that looks like the queue's work."""
    if queue == "emails":
        template = rng.choice(["welcome", "receipt", "reset"])
        return {"to": f"user{i}@example.com", "template": template, "locale": "en-GB"}
    if queue == "thumbnails":
        return {"upload": f"s3://uploads/{_uuid(rng)}.jpg", "sizes": [64, 256, 1024]}
    if queue == "billing":
        return {"customer": f"cus_{_hex(rng, 14)}", "amountCents": rng.randint(500, 90_000), "currency": "EUR"}
    if queue == "webhooks":
        return {"endpoint": f"https://hooks.example.com/endpoint/{i % 977}", "event": "order.paid", "orderId": i}
    if queue == "reports":
        return {"report": rng.choice(["sales", "churn", "inventory"]), "region": rng.choice(["eu", "us", "apac"])}
    return {"file": f"imports/{i}.csv", "rows": rng.randint(100, 50_000)}


def run_value(
    rng: random.Random, *, rid: str, name: str, module: str, status: str, started: int, data: Any,
    attempts: int = 1, job_id: str | None = None, error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A run record with the spec's shape (docs/explanation/storage-model.md, the run record)."""
    running = status == "running"
    duration = None if running else int(rng.lognormvariate(5.5, 1.0))
    ended = None if running else started + (duration or 0)
    progress = rng.randint(5, 95) if running else (100 if status == "completed" else rng.randint(0, 90))
    logs = [
        {"level": "info", "msg": f"picked up by {name}", "ts": started + 2},
        {"level": "info", "msg": f"step 1 of 3 done for {name}", "ts": started + 40},
    ]
    timeline = [{"ts": started, "from": "waiting", "to": "running", "reason": f"attempt {attempts}"}]
    if not running:
        logs.append({"level": "error" if error else "info", "msg": error["message"] if error else "done", "ts": ended})
        timeline.append({"ts": ended, "from": "running", "to": status, "reason": status})
    value: dict[str, Any] = {
        "id": rid, "name": name, "module": module, "status": status, "trigger": module,
        "input": data, "output": {"ok": True, "items": rng.randint(1, 40)} if status == "completed" else None,
        "attempts": attempts, "progressPercent": progress, "logs": logs, "timeline": timeline,
        "error": error, "app": PROJECT, "environment": ENVIRONMENT, "workerId": rng.choice(WORKERS),
        "startedAt": started, "endedAt": ended, "durationMs": duration,
    }
    if job_id is not None:
        value["jobId"] = job_id
    return value


# -- the generators ------------------------------------------------------------------


def dead_jobs(plan: SeedPlan, rng: random.Random) -> Iterator[tuple[Job, list[dict[str, Any]]]]:
    """Each dead job with the failed runs of its attempts (1 to 3 of them kept)."""
    for i in range(plan.dead):
        queue = pick_queue(rng)
        which = rng.randrange(len(ERRORS[queue]))
        kept = rng.choice((1, 2, 2, 3))
        died = started_at(rng, plan.now)
        created = died - kept * 60_000 - rng.randint(0, 3_600_000)
        job = Job(id=f"j{created:012x}{_hex(rng, 8)}", queue=queue, data=job_data(rng, queue, i),
                  created_at=created, max_attempts=kept, attempts=kept)
        runs = []
        for attempt in range(1, kept + 1):
            at = died - (kept - attempt) * 60_000 - 500
            error = make_error(rng, queue, at, which=which)
            rid = run_id(rng, at)
            job.record_error({**error, "attempt": attempt, "runId": rid})
            runs.append(run_value(rng, rid=rid, name=queue, module="queue", status="failed", started=at,
                                  data=job.data, attempts=attempt, job_id=job.id, error=error))
        job.run_id = runs[-1]["id"]
        job.updated_at = died
        job.die(f"failed on attempt {kept} of {kept}", died)
        yield job, runs


def live_jobs(plan: SeedPlan, rng: random.Random) -> Iterator[tuple[Job, dict[str, Any] | None]]:
    """The backlog: active jobs (with their running run), delayed, then waiting jobs."""
    total = plan.jobs - plan.dead
    for i in range(total):
        queue = pick_queue(rng)
        created = plan.now - int(rng.random() * 6 * 3600 * 1000)
        job = Job(id=f"j{created:012x}{_hex(rng, 8)}", queue=queue, data=job_data(rng, queue, i),
                  created_at=created, updated_at=created, priority=rng.choice((0, 0, 0, 5)))
        run = None
        if i < plan.active:
            started = plan.now - rng.randint(1_000, 120_000)
            job.status, job.attempts, job.started_at = "active", 1, started
            job.worker_id = rng.choice(WORKERS)
            run = run_value(rng, rid=run_id(rng, started), name=queue, module="queue", status="running",
                            started=started, data=job.data, job_id=job.id)
            job.run_id = run["id"]
        elif i < plan.active + plan.delayed:
            job.status, job.run_at = "delayed", plan.now + rng.randint(60_000, 6 * 3600 * 1000)
        yield job, run


def history_runs(plan: SeedPlan, rng: random.Random, count: int, failed: int) -> Iterator[dict[str, Any]]:
    """Finished runs of jobs long gone: completed, some failed attempts, a few cancelled,
    and cron runs (no job)."""
    failed_every = max(count // max(failed, 1), 1)
    for i in range(count):
        started = started_at(rng, plan.now)
        if rng.random() < 0.05:
            name, module, job_id = rng.choice(CRONS), "cron", None
        else:
            name = pick_queue(rng)
            module, job_id = ("worker" if rng.random() < 0.1 else "queue"), f"j{started:012x}{_hex(rng, 8)}"
        status, error = "completed", None
        if i % failed_every == 0 and failed > 0 and module != "cron":
            status, error = "failed", make_error(rng, name, started)
        elif rng.random() < 0.005:
            status = "cancelled"
        queue = name if module != "cron" else "emails"
        yield run_value(rng, rid=run_id(rng, started), name=name, module=module, status=status, started=started,
                        data=job_data(rng, queue, i), attempts=1 if status != "failed" else 2, job_id=job_id,
                        error=error)


# -- writing -------------------------------------------------------------------------


class BatchWriter:
    """``put_many`` in batches of :data:`BATCH`, one batch in flight on a second thread
    while the next one is generated."""

    def __init__(self, plane: DurablePlane) -> None:
        self.plane = plane
        self.pool = ThreadPoolExecutor(max_workers=1)
        self.pending: list[RecordWrite] = []
        self.inflight: Future[int] | None = None
        self.written = 0

    def add(self, write: RecordWrite) -> None:
        self.pending.append(write)
        if len(self.pending) >= BATCH:
            self._send()

    def _send(self) -> None:
        batch, self.pending = self.pending, []
        if self.inflight is not None:
            self.written += self.inflight.result()
        self.inflight = self.pool.submit(self.plane.put_many, batch) if batch else None

    def close(self) -> int:
        self._send()
        if self.inflight is not None:
            self.written += self.inflight.result()
            self.inflight = None
        self.pool.shutdown()
        return self.written


def _progress(label: str, done: int, total: int, started: float) -> None:
    rate = done / max(time.perf_counter() - started, 1e-9)
    print(f"\r  {label}: {done:>9,} / {total:,} ({rate:,.0f}/s)", end="", flush=True)


def seed(url: str, plan: SeedPlan) -> SeedSummary:
    """Write the whole data set (the tables must be empty for this scope)."""
    config = OqronConfig(mode="postgres", database_url=url, project=PROJECT, environment=ENVIRONMENT)
    engine = oqronkit.Engine(config, registry=oqronkit.Registry())
    plane = engine.durable
    rng = random.Random(20250704)
    began = time.perf_counter()
    writer = BatchWriter(plane)
    samples: dict[str, Any] = {}
    fingerprints: dict[str, int] = {}
    runs_written = 0

    print("seeding dead letters and their failed runs")
    for n, (job, runs) in enumerate(dead_jobs(plan, rng), 1):
        writer.add(RecordWrite(job.namespace, job.id, job.to_value()))
        for run in runs:
            writer.add(RecordWrite(RUNS, run["id"], run))
        runs_written += len(runs)
        fingerprints[job.error_fingerprint or ""] = fingerprints.get(job.error_fingerprint or "", 0) + 1
        if len(runs) >= 2 and "sample_dead_job" not in samples:
            samples.update(sample_dead_job=job.id, sample_dead_queue=job.queue, sample_failed_run=runs[-1]["id"])
        if n % 5_000 == 0:
            _progress("dead jobs", n, plan.dead, began)

    dead_runs = runs_written
    print("\nseeding the backlog (waiting, delayed, active jobs)")
    signals: dict[str, list[Signal]] = {q: [] for q in QUEUES}
    active: dict[str, list[str]] = {q: [] for q in QUEUES}
    for n, (job, run) in enumerate(live_jobs(plan, rng), 1):
        writer.add(RecordWrite(job.namespace, job.id, job.to_value()))
        signals[job.queue].append(Signal(job.id, job.priority, job.run_at))
        if run is not None:
            writer.add(RecordWrite(RUNS, run["id"], run))
            runs_written += 1
            active[job.queue].append(job.id)
            samples.setdefault("sample_running_run", run["id"])
        elif job.status == "waiting" and "sample_waiting_job" not in samples:
            samples.update(sample_waiting_job=job.id, sample_waiting_queue=job.queue)
        if n % 20_000 == 0:
            _progress("jobs", n, plan.jobs - plan.dead, began)

    history = plan.runs - runs_written
    failed_left = max(int(plan.runs * plan.failed_share) - dead_runs, 0)
    print(f"\nseeding {history:,} finished runs")
    for n, run in enumerate(history_runs(plan, rng, history, failed_left), 1):
        writer.add(RecordWrite(RUNS, run["id"], run))
        if n % 50_000 == 0:
            _progress("runs", n, history, began)
    writer.add(RecordWrite(*MARKER, {"state": "writing"}))
    written = writer.close()
    print(f"\n  {written:,} records written in {time.perf_counter() - began:.0f} s")

    _signal_backlog(engine, signals, active, plan.now)
    _write_control(plane, plan.now)
    summary = SeedSummary(
        seeded_at=plan.now, runs=plan.runs, jobs=plan.jobs, dead=plan.dead, queues=list(QUEUES),
        sample_fingerprint=max(fingerprints, key=lambda k: fingerprints[k]), **samples,
    )
    plane.put(*MARKER, summary.to_value())
    engine.close()
    return summary


def _signal_backlog(engine: oqronkit.Engine, signals: dict[str, list[Signal]], active: dict[str, list[str]],
                    now: int) -> None:
    """Put the backlog in the hot plane: active jobs first, claimed under a long lease,
    then waiting and delayed jobs."""
    hot = engine.hot
    for queue, group in signals.items():
        leased = set(active[queue])
        hot.signal(queue, [s for s in group if s.job_id in leased], now)
        remaining = len(leased)
        while remaining > 0:
            claimed = hot.claim(queue, worker_id=WORKERS[0], limit=min(remaining, 1000),
                                lease_ms=30 * DAY_MS, now=now)
            if not claimed:
                break
            remaining -= len(claimed)
        rest = [s for s in group if s.job_id not in leased]
        for start in range(0, len(rest), BATCH):
            hot.signal(queue, rest[start:start + BATCH], now)
    print("  hot plane: backlog signalled")


def _write_control(plane: DurablePlane, now: int) -> None:
    """Each queue's control record, as a worker publishes it (pause state, settings)."""
    plane.put_many(
        RecordWrite("queue", q, {"name": q, "paused": False, "strategy": "fifo", "concurrency": 10, "retries": 3,
                                 "deadLetter": True, "handler": f"shop.tasks.{q}.handle", "updatedAt": now})
        for q in QUEUES
    )


# -- reuse, reseed, analyze ----------------------------------------------------------


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def ensure_database(url: str) -> None:
    """Create the bench database when it does not exist (connecting to ``postgres``)."""
    import psycopg

    name = database_name(url)
    admin = url.replace(f"/{name}", "/postgres", 1)
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')  # a name the operator chose, not input from a page
            print(f"created database {name}")


def existing_seed(url: str, plan: SeedPlan) -> SeedSummary | None:
    """The marker of a complete, fresh seed of the same size, or None."""
    plane = oqronkit.open_durable(OqronConfig(mode="postgres", database_url=url, project=PROJECT,
                                              environment=ENVIRONMENT))
    try:
        found = plane.get(*MARKER)
        value = dict(found.value) if found is not None else {}
        if value and not value.get("sample_waiting_queue"):  # markers written before the field existed
            waiting = plane.list(kind="job", status="waiting", limit=1).records
            if waiting:
                value.update(sample_waiting_job=waiting[0].id, sample_waiting_queue=waiting[0].value["queue"])
    finally:
        plane.close()
    if value.pop("version", None) != SEED_VERSION:
        return None
    if value.get("runs") != plan.runs or value.get("jobs") != plan.jobs:
        print("the existing seed has other sizes: reseeding")
        return None
    if plan.now - int(value.get("seeded_at", 0)) > STALE_AFTER_MS:
        print("the existing seed is more than a day old (its 24 h windows are nearly empty): reseeding")
        return None
    return SeedSummary(**value, reused=True)


def drop_tables(url: str) -> None:
    """Drop the engine's tables in the bench database (refused elsewhere)."""
    import psycopg

    name = database_name(url)
    if "bench" not in name:
        raise SystemExit(f"--reseed drops the engine's tables; refusing on database {name!r} (no 'bench' in its name)")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS " + ", ".join((*DURABLE_TABLES, *HOT_TABLES)))
        conn.execute("DROP SEQUENCE IF EXISTS oqron_hot_token_seq, oqron_hot_ord_seq")


def analyze(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for table in (*DURABLE_TABLES, "oqron_hot_jobs"):
            conn.execute(f"ANALYZE {table}")  # our own table names
    print("ANALYZE done")


def ensure_seeded(url: str, plan: SeedPlan, *, reseed: bool = False) -> SeedSummary:
    """Reuse a fresh seed of the same size, or drop the tables and seed again."""
    ensure_database(url)
    summary = None if reseed else existing_seed(url, plan)
    if summary is not None:
        age_h = (plan.now - summary.seeded_at) / 3_600_000
        print(f"reusing the seed from {age_h:.1f} h ago ({summary.runs:,} runs, {summary.jobs:,} jobs); "
              "--reseed to write it again")
        return summary
    drop_tables(url)
    summary = seed(url, plan)
    analyze(url)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--jobs", type=int, default=200_000)
    parser.add_argument("--messages", type=int, default=1_000_000, help="retained messages (0: no topics)")
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--reseed", action="store_true", help="drop the engine's tables and seed again")
    args = parser.parse_args(argv)
    summary = ensure_seeded(args.database_url, SeedPlan(runs=args.runs, jobs=args.jobs), reseed=args.reseed)
    print(summary)
    if args.messages:
        import topic_seed  # bench/topic_seed.py (it imports this module)

        print(topic_seed.ensure_topics_seeded(args.database_url, topic_seed.TopicPlan(args.messages, args.topics)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

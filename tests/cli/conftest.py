"""A real engine per test (a SQLite file, or a private Postgres schema and scope) seeded
with known state, and a helper that runs one CLI command against it in-process."""

from __future__ import annotations

import io
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from oqronkit import Engine, Job, OqronConfig, RecordWrite, Registry
from oqronkit.cli import Console, build_parser, execute
from oqronkit.clock import now_ms
from oqronkit.queues.runs import finish_run, new_run
from oqronkit.scheduler.control import store_definition
from oqronkit.scheduler.definition import Definition

MINUTE = 60_000


@dataclass
class Seeded:
    """What :func:`seed` wrote: job ids by role."""

    waiting: list[str]
    delayed: str
    dead_boom: list[str]
    dead_key: str
    dead_reports: str


@dataclass
class Outcome:
    code: int
    out: str
    err: str


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request: pytest.FixtureRequest, tmp_path) -> Iterator[Engine]:
    project = f"cli-{uuid.uuid4().hex[:10]}"
    if request.param == "sqlite":
        config = OqronConfig(mode="sqlite", database_url=f"sqlite:///{tmp_path / 'oqron.sqlite3'}", project=project)
    else:
        config = OqronConfig(mode="postgres", database_url=request.getfixturevalue("pg_schema_url"), project=project)
    planes = Engine(config, registry=Registry())
    try:
        yield planes
    finally:
        planes.close()


def dead_job(queue: str, job_id: str, *, message: str, kind: str, died: int) -> Job:
    job = Job(id=job_id, queue=queue, data={"n": 1}, status="active", created_at=died - MINUTE,
              updated_at=died, attempts=3, max_attempts=3)
    job.record_error({"type": kind, "message": message, "ts": died, "attempt": 3})
    job.die("failed on attempt 3 of 3", died)
    return job


def run_value(run_id: str, *, name: str, status: str, started: int, error: dict[str, Any] | None = None
              ) -> dict[str, Any]:
    run = new_run(name=name, module="queue", trigger="queue", input={"n": 1}, attempts=1, app="cli",
                  environment="test", worker_id="worker-1", job_id=f"job-{run_id}", started_at=started)
    run["id"] = run_id
    finish_run(run, status, error=error, at=started + 1500)  # type: ignore[arg-type]
    return dict(run)


def seed(engine: Engine) -> Seeded:
    """Queue ``emails`` (a record; 2 waiting, 1 delayed, 2 "boom" and 1 KeyError dead
    letters), queue ``reports`` (no record, 1 dead letter), 3 runs, a cron."""
    now = now_ms()
    durable = engine.durable
    durable.put("queue", "emails", {"name": "emails", "paused": False, "concurrency": 5, "strategy": "fifo",
                                    "handler": "shop.jobs.send_email", "updatedAt": now})
    emails = engine.queue("emails")
    waiting = [emails.add({"to": f"a{i}@example.com"}).id for i in range(2)]
    delayed = emails.add({"to": "later@example.com"}, delay=3600).id
    dead = [dead_job("reports", "d-report", message="timeout", kind="TimeoutError", died=now - 90 * MINUTE),
            dead_job("emails", "d-boom-1", message="boom", kind="ValueError", died=now - 3 * MINUTE),
            dead_job("emails", "d-boom-2", message="boom", kind="ValueError", died=now - 2 * MINUTE),
            dead_job("emails", "d-key", message="'sku' missing", kind="KeyError", died=now - MINUTE)]
    for job in dead:  # one write each, in the order they died: listings are newest written first
        durable.put(job.namespace, job.id, job.to_value())
        time.sleep(0.003)
    runs = [run_value("r-old", name="emails", status="completed", started=now - 120 * MINUTE),
            run_value("r-ok", name="emails", status="completed", started=now - 5 * MINUTE),
            run_value("r-bad", name="reports", status="failed", started=now - 4 * MINUTE,
                      error={"type": "TimeoutError", "message": "timeout", "ts": now})]
    durable.put_many(RecordWrite("runs", r["id"], r) for r in runs)
    store_definition(engine, Definition(kind="cron", name="nightly", expression="0 3 * * *"), now)
    return Seeded(waiting=waiting, delayed=delayed, dead_boom=["d-boom-1", "d-boom-2"], dead_key="d-key",
                  dead_reports="d-report")


@pytest.fixture
def seeded(engine: Engine) -> Seeded:
    return seed(engine)


def cli(engine: Engine, *argv: str, tty: bool = False, answer: str = "", user: str = "alice") -> Outcome:
    """Run ``oqron <argv>`` on ``engine``; a usage error from argparse comes back as exit 2."""
    out, err = io.StringIO(), io.StringIO()
    console = Console(stdin=io.StringIO(answer), stdout=out, stderr=err, interactive=tty, user=user)
    parser = build_parser("oqron", connection_options=False)
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:
        return Outcome(int(exc.code or 0), out.getvalue(), err.getvalue())
    code = execute(args, engine, console)
    return Outcome(code, out.getvalue(), err.getvalue())


def audit_entries(engine: Engine, limit: int = 10) -> list[dict[str, Any]]:
    """The newest audit records first (their ids start with the time)."""
    records = engine.durable.list("audit", limit=1000).records
    return [r.value for r in sorted(records, key=lambda r: r.id, reverse=True)[:limit]]

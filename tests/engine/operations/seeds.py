"""Runs and webhook deliveries for the replay and resend operations' tests, in the shapes
a worker stores them (``oqronkit.queues.runs``, ``oqronkit.webhooks.delivery``), written
straight to the durable plane: no worker, no network."""

from __future__ import annotations

from typing import Any

from oqronkit import Engine, Job
from oqronkit.clock import now_ms
from oqronkit.durable import RecordWrite
from oqronkit.namespaces import RUNS, dlq_namespace, job_namespace
from oqronkit.queues.runs import finish_run, new_run
from oqronkit.webhooks import new_secret
from oqronkit.webhooks.webhook import Webhook, delivery_queue_name


def put_run(engine: Engine, name: str, data: Any, *, output: Any = None, status: str = "completed",
            started: int | None = None, module: str = "queue", job_id: str | None = None,
            extra: dict[str, Any] | None = None) -> str:
    """One finished run of ``name``; its id."""
    at = now_ms() - 5000 if started is None else started
    run = new_run(name=name, module=module, trigger=module, input=data, attempts=1, app="test", environment="test",
                  worker_id="w", job_id=job_id, started_at=at, extra=extra)
    finish_run(run, status, output=output if status == "completed" else None, at=at + 3,
               error={"type": "RuntimeError", "message": "boom"} if status == "failed" else None)
    engine.durable.put_many([RecordWrite(RUNS, run["id"], dict(run))])
    return run["id"]


def seed_runs(engine: Engine, handler: str, count: int, *, started: int | None = None) -> list[str]:
    """``count`` completed runs of ``handler`` with input n and output {"double": 2n},
    a millisecond apart, the newest first in the returned ids."""
    at = (now_ms() - 10_000) if started is None else started
    ids = [put_run(engine, handler, n, output={"double": 2 * n}, started=at + n) for n in range(count)]
    return ids[::-1]


def webhook(engine: Engine, name: str = "billing") -> Webhook:
    """A webhook with one endpoint (every event) at a loopback URL nothing answers."""
    hook = Webhook(name, secret=new_secret(), engine=engine, timeout=5, schedule=[0, 1, 60],
                   endpoints=[{"id": "crm", "url": "http://127.0.0.1:9/crm", "events": ["**"], "allow_private": True}])
    hook.endpoints()  # writes the control record, as a worker's first fire does
    return hook


def delivery(hook: Webhook, event: str = "order.paid", *, attempts: tuple[str, ...] = ("failed",),
             started: int | None = None, end: str = "queued") -> str:
    """A fired delivery with its attempts' runs (``started`` the first's start), left
    ``queued``, ``completed`` (its job gone) or ``dead`` (dead-lettered)."""
    (job_id,) = hook.fire(event, {"order": 7})
    job = hook.queue.get_job(job_id)
    assert job is not None
    at = now_ms() - 5000 if started is None else started
    for n, status in enumerate(attempts):
        put_run(hook.engine, delivery_queue_name(hook.name), dict(job.data), status=status, started=at + n,
                module="webhook", job_id=job_id, output={"status": 200},
                extra={"webhook": hook.name, "event": event, "endpointId": "crm",
                       "messageId": job.data["messageId"]})
    durable = hook.engine.durable
    if end != "queued":
        durable.delete(job_namespace(hook.queue.name), job_id)
    if end == "dead":
        now = now_ms()
        dead = Job(id=job_id, queue=hook.queue.name, data=job.data, status="active", created_at=now, updated_at=now,
                   attempts=3, max_attempts=3)
        dead.record_error({"type": "RetryAfter", "message": "HTTP 500", "attempt": 3})
        dead.die("failed on attempt 3 of 3", now)
        durable.put(dlq_namespace(hook.queue.name), job_id, dead.to_value())
    return job_id

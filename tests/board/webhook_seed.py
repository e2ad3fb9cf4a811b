"""Webhooks for the board's tests, written the way the engine writes them: the control
record and endpoints through :class:`oqronkit.webhooks.webhook.Webhook`, deliveries
through its ``fire``, and each attempt's run, dead letter and breaker record in the
shapes a worker stores (``oqronkit.webhooks.delivery``, ``breaker``, ``oqronkit.queues.runs``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oqronkit import Job
from oqronkit.clock import now_ms
from oqronkit.queues.runs import finish_run, new_run
from oqronkit.webhooks import new_secret
from oqronkit.webhooks.breaker import breaker_record_id
from oqronkit.webhooks.webhook import Webhook, delivery_queue_name
from tests.board.seed import Board, error, put_jobs, put_runs

HOSTILE = "<script>alert(1)</script>"


@dataclass
class SeededWebhook:
    name: str
    hook: Webhook
    deliveries: dict[str, dict[str, Any]]  # delivery id -> job data

    @property
    def queue(self) -> str:
        return delivery_queue_name(self.name)


def declare(board: Board, name: str = "billing", *, endpoints: tuple[str, ...] = ("shop", "crm"),
            scope: Any = None) -> SeededWebhook:
    """Webhook ``name`` with endpoints at loopback URLs (``shop`` takes ``order.*``, the
    others everything), its records written as a worker's first fire writes them."""
    engine = (scope or board.scope).engine
    hook = Webhook(name, secret=new_secret(), engine=engine, timeout=5, schedule=[0, 1, 60],
                   endpoints=[{"id": e, "url": f"http://127.0.0.1:9/{e}", "events": ["order.*"] if e == "shop"
                               else ["**"], "allow_private": True} for e in endpoints])
    hook.endpoints()  # writes the control record and the declared endpoints
    return SeededWebhook(name, hook, {})


def fire(seeded: SeededWebhook, event: str = "order.paid", data: Any = None) -> list[str]:
    ids = seeded.hook.fire(event, data if data is not None else {"order": 7})
    for job_id in ids:
        job = seeded.hook.queue.get_job(job_id)
        assert job is not None
        seeded.deliveries[job_id] = dict(job.data)
    return ids


def attempt(board: Board, seeded: SeededWebhook, delivery_id: str, *, status: str = "completed",
            http: int | None = 200, body: str = '{"ok": true}', attempt_no: int = 1, ms: int = 40,
            started: int | None = None, error_message: str | None = None,
            headers: dict[str, str] | None = None) -> str:
    """One attempt's run, as the deliverer annotates and the worker closes it (``headers``:
    the endpoint's, as stored in the request)."""
    data = seeded.deliveries[delivery_id]
    at = now_ms() - 5000 + attempt_no if started is None else started
    request = {"method": "POST", "url": f"http://127.0.0.1:9/{data['endpointId']}",
               "headers": {"content-type": "application/json", **(headers or {}), "webhook-id": data["messageId"]},
               "body": f'{{"type": "{data["event"]}"}}', "bodyBytes": 20, "bodyTruncated": False}
    response = None if http is None else {"status": http, "headers": {"content-type": "text/html"}, "body": body,
                                          "bodyTruncated": False, "durationMs": ms}
    run = new_run(name=seeded.queue, module="webhook", trigger="webhook", input=data, attempts=attempt_no, app="test",
                  environment="test", worker_id="worker-1", job_id=delivery_id, started_at=at,
                  extra={"webhook": seeded.name, "event": data["event"], "endpointId": data["endpointId"],
                         "messageId": data["messageId"], "request": request, "response": response})
    failed = status == "failed"
    finish_run(run, status, at=at + ms + 2,
               error=error(error_message or (f"HTTP {http} from the endpoint" if http else "ConnectError"),
                           "RetryAfter") if failed else None,
               output={"status": http, "durationMs": ms} if status == "completed" else None)
    put_runs(seeded.hook.engine.durable, [dict(run)])
    return run["id"]


def settle(board: Board, seeded: SeededWebhook, delivery_id: str, *, dead: bool = False,
           died: int | None = None) -> None:
    """Take the delivery's job out of the queue: completed (gone), or dead-lettered."""
    plane = seeded.hook.engine.durable
    job = seeded.hook.queue.get_job(delivery_id)
    assert job is not None
    plane.delete(f"queue_job:{seeded.queue}", delivery_id)
    if dead:
        at = now_ms()
        dead_job = Job(id=delivery_id, queue=seeded.queue, data=job.data, status="active", created_at=at,
                       updated_at=at, attempts=3, max_attempts=3)
        dead_job.record_error({**error("HTTP 500 from the endpoint", "RetryAfter"), "attempt": 3})
        dead_job.die("failed on attempt 3 of 3", died if died is not None else at)
        put_jobs(plane, [dead_job])


def breaker(board: Board, seeded: SeededWebhook, endpoint: str, state: str = "open", *, failures: int = 5,
            status: int | None = 503) -> None:
    now = now_ms()
    seeded.hook.engine.durable.put("webhook_cb", breaker_record_id(seeded.name, endpoint), {
        "webhook": seeded.name, "endpointId": endpoint, "state": state, "since": now - 60_000,
        "reopensAt": now + 30_000 if state == "open" else None, "cooldownMs": 30_000,
        "consecutiveFailures": failures, "failingSince": now - 120_000,
        "lastFailure": {"at": now - 60_000, "status": status, "error": f"HTTP {status}"}, "updatedAt": now})

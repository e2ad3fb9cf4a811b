"""Resend as a tracked operation: every webhook delivery whose attempts the delivery log's
filters match, in a window frozen at creation, sent again once, chunk by chunk.

A chunk reads the next page of delivery attempts, newest first (the runs' index), keeps
each delivery's newest attempt, and resends as the board's "resend one" does: a dead
letter is retried, a completed delivery is added again from that attempt's input (same
job id, ``webhook-id`` and body), one still queued is left as it is. Its effects (jobs
put, dead letters removed), the deliveries it handled (``operation_items:<op>``, so an
older attempt of the same delivery further down the walk is not sent again) and the
cursor with the counts are one atomic durable write: a crash leaves all or nothing, and
the next runner starts from the last cursor written, so no delivery is sent twice by
the operation. The hot plane hears of the jobs after that write (else the reconciler).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..backends.hot_types import Signal
from ..clock import now_ms
from ..durable import RecordWrite
from ..errors import InvalidRecord, OqronError
from ..namespaces import OPERATION_PROGRESS, RUNS, WEBHOOK, dlq_namespace, job_namespace, operation_items_namespace
from ..queues.control import revive
from ..queues.enqueue import build_job
from ..queues.jobs import Job
from ..queues.runs import RUN_STATUSES
from ..webhooks.handles import delivery_queue
from ..webhooks.webhook import delivery_queue_name, resendable_data
from .filters import TARGET_DELIVERIES, DeliveryFilter
from .records import MAX_ERRORS_KEPT, Operation, Progress, Starter, check_texts, new_operation

#: How long the record of a delivery an operation handled is kept (retention prunes it).
ITEM_TTL_MS = 30 * 24 * 3600 * 1000


def create_resend(ops: Starter, *, user: str, since: int, before: int | None = None, webhook: str = "",
                  endpoint: str = "", event: str = "", status: str = "", planned: int | None = None,
                  source: str = "api", name: str = "") -> Operation:
    """See :meth:`Operations.create_resend`."""
    check_texts(user=user, webhook=webhook, endpoint=endpoint, event=event, name=name)
    if status and status not in RUN_STATUSES:
        raise InvalidRecord(f"Unknown run status {status!r}: use one of {', '.join(RUN_STATUSES)}.")
    for label, number in (("since", since), ("before", before), ("planned", planned)):
        if number is not None and (isinstance(number, bool) or not isinstance(number, int) or number < 0):
            raise InvalidRecord(f"{label} must be epoch milliseconds (a whole number), got {number!r}.")
    now = now_ms()
    window = DeliveryFilter(since=since, before=now + 1 if before is None else min(before, now + 1),
                            webhook=webhook, endpoint=endpoint, event=event, status=status)
    value = new_operation("resend", TARGET_DELIVERIES, window.to_value(), user=user, source=source, now=now,
                          name=name or _default_name(window), planned=planned,
                          queues=[delivery_queue_name(webhook)] if webhook else [])
    return ops.start(value)


def _default_name(window: DeliveryFilter) -> str:
    where = f"webhook {window.webhook}" if window.webhook else "every webhook"
    extra = "".join(f", {label} {text!r}" for label, text in (("endpoint", window.endpoint), ("event", window.event),
                                                               ("status", window.status)) if text)
    return f"Resend deliveries of {where}{extra}"


class _Chunk:
    """One chunk's writes and signals, gathered per delivery."""

    def __init__(self, engine: Any, op_id: str, now: int) -> None:
        self.engine, self.now = engine, now
        self.items = operation_items_namespace(op_id)
        self.puts: list[RecordWrite] = []
        self.deletes: list[tuple[str, str]] = []
        self.signals: dict[str, list[Signal]] = {}
        self.failed: list[dict[str, Any]] = []
        self.resent = self.left = 0

    def handled(self, key: str, outcome: str) -> None:
        self.puts.append(RecordWrite(self.items, key, {"outcome": outcome, "at": self.now},
                                     expires_at=self.now + ITEM_TTL_MS))

    def fail(self, key: str, queue: str, delivery: str, error: str) -> None:
        self.failed.append({"queue": queue, "id": delivery, "error": error[:300]})
        self.handled(key, "failed")

    def resend(self, webhook: str, control: Mapping[str, Any] | None, found: list[tuple[str, str, Any]]) -> None:
        """``found``: (ledger key, delivery id, newest attempt's input) of one webhook."""
        queue = delivery_queue_name(webhook)
        if control is None:
            for key, delivery, _ in found:
                self.fail(key, queue, delivery, f"Webhook {webhook!r} is no longer defined here.")
            return
        adds_to = delivery_queue(self.engine, webhook, control)
        ids = [delivery for _, delivery, _ in found]
        durable = self.engine.durable
        live = {r.id: r.value for r in durable.get_many(job_namespace(queue), ids)}
        dead = {r.id: r.value for r in durable.get_many(dlq_namespace(queue), ids)}
        for key, delivery, delivered in found:
            if delivery in live and live[delivery].get("status") != "dead":
                self.left += 1  # still queued: it will be delivered as it is
                self.handled(key, "queued")
                continue
            try:
                if delivery in dead or delivery in live:
                    job = Job.from_value(dead.get(delivery) or live[delivery])
                    revive(job, self.now)
                    if delivery in dead:
                        self.deletes.append((dlq_namespace(queue), delivery))
                else:
                    job = build_job(adds_to, resendable_data(webhook, delivery, delivered or {}), job_id=delivery)
            except (OqronError, KeyError, TypeError, ValueError) as exc:
                self.fail(key, queue, delivery, f"{type(exc).__name__}: {exc}")
                continue
            self.puts.append(RecordWrite(job_namespace(queue), delivery, job.to_value()))
            if job.status == "waiting":
                self.signals.setdefault(queue, []).append(Signal(job.id, job.priority, None, job.lifo))
            self.resent += 1
            self.handled(key, "resent")


def resend_chunk(engine: Any, op: Operation, chunk: int) -> Callable[[], None]:
    """One chunk of a resend operation, written; returns what signals its jobs."""
    window = op.filter
    assert isinstance(window, DeliveryFilter), "a resend operation walks delivery attempts"
    progress = op.progress
    durable = engine.durable
    page = durable.list(RUNS, **window.list_options(delivery_queue_name(window.webhook) if window.webhook else None),
                        order="started", descending=True, limit=chunk, cursor=progress.cursor)
    newest: dict[str, tuple[str, str, Any]] = {}  # each delivery's newest attempt in this page
    for record in page.records:
        run = record.value
        hook, delivery = run.get("webhook"), run.get("jobId")
        if window.matches(run) and isinstance(hook, str) and isinstance(delivery, str):
            newest.setdefault(f"{hook}/{delivery}", (hook, delivery, run.get("input")))
    work = _Chunk(engine, op.id, now_ms())
    done_before = {r.id for r in durable.get_many(work.items, list(newest))}
    by_webhook: dict[str, list[tuple[str, str, Any]]] = {}
    for key, (hook, delivery, delivered) in newest.items():
        if key not in done_before:
            by_webhook.setdefault(hook, []).append((key, delivery, delivered))
    for hook, found in by_webhook.items():
        control = durable.get(WEBHOOK, hook)
        work.resend(hook, control.value if control is not None else None, found)
    walked = page.records
    started = walked[-1].value.get("startedAt") if walked else None
    over = page.next_cursor is None
    advanced = Progress(
        queue_index=progress.queue_index + over, cursor=page.next_cursor, scanned=progress.scanned + len(walked),
        done=progress.done + work.resent, failed=progress.failed + len(work.failed),
        skipped=progress.skipped + len(walked) - work.resent - len(work.failed), chunks=progress.chunks + 1,
        updated_at=work.now, errors=(progress.errors + work.failed)[:MAX_ERRORS_KEPT],
        position=int(started) if isinstance(started, int | float) else progress.position)
    durable.apply(puts=[*work.puts, RecordWrite(OPERATION_PROGRESS, op.id, advanced.to_value())],
                  deletes=work.deletes)

    def signal() -> None:
        for queue, signals in work.signals.items():
            engine.hot.signal(queue, signals, work.now)

    return signal

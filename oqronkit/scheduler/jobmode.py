"""Job mode (``as_job=True``): each slot becomes a durable job in the definition's own
queue (``cron.<name>`` / ``schedule.<name>``), so it gains the queue's retries, dead
letters and hand-off to any worker.

The slot's claim is still a run record (module ``cron``/``schedule``, status ``queued``,
``jobId`` = the claim id), inserted before the job is added; the job's id is the claim
id, so adding it again after a leader failover returns the existing job. The claim is
settled (completed / failed) by the queue's hooks when the job finishes; each attempt
also has its own run in the queue, as every job does.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ..errors import OqronError
from ..namespaces import RUNS, job_namespace
from ..queues.backoff import Backoff
from ..queues.runs import ErrorValue, RunValue, finish_run, stored_run
from .context import JobCronContext
from .definition import Definition

if TYPE_CHECKING:
    from ..engine import Engine
    from ..queues.queue import Queue, QueueHost

logger = logging.getLogger(__name__)


def declare_queue(definition: Definition, fn: Callable[..., Any], engine: Engine | None) -> Queue:
    """The internal queue that runs ``fn`` for each slot's job."""
    from ..queues.queue import Queue, default_registry

    zone = definition.timezone

    def run_slot(job_ctx: Any) -> Any:
        output = fn(JobCronContext(job_ctx, zone))
        if inspect.isawaitable(output):
            import asyncio  # only for an async def handler: worker/executor.py says why

            output = asyncio.run(_await(output))
        return output

    run_slot.__qualname__ = f"{getattr(fn, '__qualname__', 'handler')}[{definition.kind}]"
    run_slot.__module__ = getattr(fn, "__module__", __name__)
    queue: Queue | None = None

    def on_complete(job: Any, output: Any) -> None:
        settle_claim(queue.engine if queue else None, job.id, "completed", output=output, attempts=job.attempts)

    def on_dead(job: Any, error: Any) -> None:
        settle_claim(queue.engine if queue else None, job.id, "failed", error=error, attempts=job.attempts,
                     reason=getattr(job, "dead_reason", None))

    registry = engine.registry if engine is not None else default_registry
    # A re-declaration (the module imported again) replaces the internal queue; two
    # different handlers for one definition are refused earlier, by the declaration.
    registry.queues.pop(definition.queue_name, None)
    queue = Queue(
        definition.queue_name, handler=run_slot, retries=definition.retries,
        timeout=definition.timeout_ms / 1000 if definition.timeout_ms else None,
        backoff=Backoff.from_value(definition.backoff),
        concurrency=5 if definition.overlap == "allow" else 1, on_complete=on_complete, on_dead=on_dead,
        on={"cancelled": lambda event: settle_claim(queue.engine if queue else None, event.job.id, "cancelled",
                                                    attempts=event.job.attempts, reason=event.reason)},
        engine=engine,
    )
    return queue


def enqueue(engine: Engine, definition: Definition, run: RunValue) -> None:
    """Add the job of a claimed slot (idempotent: the job id is the claim id)."""
    from ..queues.queue import Queue

    queue = engine.registry.queues.get(definition.queue_name) or Queue(definition.queue_name, engine=engine)
    data = {"name": definition.name, "kind": definition.kind, "slot": run.get("slotAt"),
            "payload": run.get("input"), "trigger": run.get("trigger"), "claim": run.get("claimId")}
    queue.add(data, job_id=run["id"], attempts=definition.retries + 1)


def cancel_previous(engine: Engine, definition: Definition, job_id: str | None) -> None:
    if not job_id:
        return
    queue = engine.registry.queues.get(definition.queue_name)
    if queue is not None:
        queue.cancel(job_id, reason="cancelled: a newer slot started (overlap=cancel-previous)")


def job_busy(engine: Engine, definition: Definition, job_id: str | None) -> int:
    """1 while the previous slot's job is still in its queue."""
    if not job_id or definition.overlap == "allow":
        return 0
    return int(engine.durable.get(job_namespace(definition.queue_name), job_id) is not None)


def settle_claim(engine: QueueHost | None, claim_id: str, status: str, *, output: Any = None, error: Any = None,
                 attempts: int | None = None, reason: str | None = None) -> bool:
    """Close a job-mode claim run (status ``queued``) with its job's outcome."""
    if engine is None:
        from ..engine import get_engine

        engine = get_engine()
    try:
        record = engine.durable.get(RUNS, claim_id)
        if record is None or record.value.get("status") != "queued":
            return False
        run = stored_run(dict(record.value))
        if attempts is not None:
            run["attempts"] = attempts
        known = cast("ErrorValue | None", error if isinstance(error, dict) else None)
        finish_run(run, status, output=output, error=known, reason=reason or f"job {status}",
                   limit=engine.config.run_timeline_limit)
        return engine.durable.compare_and_set(RUNS, claim_id, expect={"status": "queued"}, value=run)
    except OqronError as exc:  # the leader's recovery pass settles it later from the job's runs
        logger.warning("could not settle claim %s: %s", claim_id, exc, extra={"action": "scheduler.claim_failed"})
        return False


async def _await(awaitable: Any) -> Any:
    return await awaitable

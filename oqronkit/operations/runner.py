"""The runner: does tracked bulk operations in chunks, on the leader.

Replays and resends walk runs (:mod:`.replaying`, :mod:`.resending`); dead letters are
walked here. One chunk reads up to ``chunk`` dead letters after the operation's cursor
(an id walk of one queue's dead letters, served by the primary key), keeps those that
match the filter and its frozen window, and writes their effect (retried jobs put back,
dead letters deleted) in one atomic write with the advanced cursor and counts. A crash mid-chunk
therefore leaves the whole chunk and its progress, or neither: the next runner starts
from the cursor written last, so nothing is done twice or skipped. Retried jobs are
signalled to the hot plane after that write; a crash in between is the reconciler's
case (a durable waiting job the hot plane never heard of). A hot-plane lock per
operation keeps two runners (a leader change) off the same operation.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..backends.hot_types import Signal
from ..clock import now_ms
from ..durable import RecordWrite
from ..errors import BackendUnavailable, InvalidState, OqronError
from ..namespaces import OPERATION_PROGRESS, dlq_namespace, job_namespace
from ..queues.control import revive
from ..queues.jobs import Job
from .api import Operations
from .filters import TARGET_DELIVERIES, TARGET_RUN_IDS, TARGET_RUNS
from .records import MAX_ERRORS_KEPT, DeadLetterFilter, Operation, Progress

if TYPE_CHECKING:
    from ..planes import Planes

logger = logging.getLogger(__name__)
DEFAULT_CHUNK = 1000  # the durable plane's largest page
LOCK_TTL_MS = 30_000
RUNNER = "operations-runner"


class OperationRunner:
    """Runs every running operation chunk by chunk; ``owner`` names this runner's lock."""

    def __init__(self, engine: Planes, *, owner: str, chunk: int = DEFAULT_CHUNK, lock_ttl_ms: int = LOCK_TTL_MS,
                 after_write: Callable[[Operation], None] | None = None) -> None:
        if not 1 <= chunk <= DEFAULT_CHUNK:
            raise ValueError(f"chunk must be between 1 and {DEFAULT_CHUNK}, got {chunk}.")
        self.engine = engine
        self.operations = Operations(engine)
        self.owner = owner
        self.chunk = chunk
        self.lock_ttl_ms = lock_ttl_ms
        # Called after a chunk's write and before its signals (tests stop a runner there).
        self.after_write = after_write

    def drain(self, *, keep_going: Callable[[], bool] = lambda: True, budget_s: float | None = None) -> int:
        """Run chunks of every running operation until none has work left, ``keep_going``
        says no (this process is no longer the leader) or ``budget_s`` is spent; returns
        how many chunks ran."""
        deadline = None if budget_s is None else time.monotonic() + budget_s
        ran = 0
        for op_id in self.operations.running_ids():
            lock = f"operation:{op_id}"
            if not self.engine.hot.acquire_lock(lock, self.owner, ttl_ms=self.lock_ttl_ms, now=now_ms()):
                continue  # another runner has it
            try:
                while keep_going() and (deadline is None or time.monotonic() < deadline):
                    if not self.engine.hot.acquire_lock(lock, self.owner, ttl_ms=self.lock_ttl_ms, now=now_ms()):
                        break  # lost it (a pause too long for the lease): the holder goes on
                    if not self.step(op_id):
                        break
                    ran += 1
            finally:
                self.engine.hot.release_lock(lock, self.owner)
        return ran

    def step(self, op_id: str) -> bool:
        """One chunk of one operation; False when it has nothing more to do now (finished,
        paused, cancelled or failed). A backend error propagates (the next drain retries);
        anything else fails the operation with the error, so it never hangs silently."""
        op = self.operations.get(op_id)
        if op.status != "running":
            return False
        try:
            return self._chunk(op)
        except BackendUnavailable:
            raise
        except Exception as exc:  # a bug or an unreadable record must end the operation visibly
            logger.exception("operation %s failed", op_id, extra={"action": "operations.failed", "operation": op_id})
            try:
                self.operations.transition(op_id, "fail", user=RUNNER, error=f"{type(exc).__name__}: {exc}")
            except OqronError:
                pass
            return False

    def _chunk(self, op: Operation) -> bool:
        if op.progress.queue_index >= op.walks:
            try:
                self.operations.transition(op.id, "finish", user=RUNNER)
            except InvalidState:  # paused or cancelled just now: its walk is over either way
                pass
            return False
        walk = chunk_walk(op.target)
        send_signals = walk(self.engine, op, self.chunk) if walk is not None else self._dead_letters(op)
        if self.after_write is not None:
            self.after_write(op)
        send_signals()
        return True

    def _dead_letters(self, op: Operation) -> Callable[[], None]:
        """One chunk of dead letters of the queue the walk is at, written; returns what
        signals the retried jobs."""
        progress = op.progress
        assert isinstance(op.filter, DeadLetterFilter), "a dead-letter operation filters dead letters"
        queue = op.queues[progress.queue_index]
        namespace = dlq_namespace(queue)
        durable = self.engine.durable
        found, next_cursor = durable.scan_statuses_page(namespace, ("dead",), cursor=progress.cursor,
                                                        page=self.chunk)
        walked = list(dict.fromkeys(id for id, _ in found))  # a Redis SCAN may repeat an id
        records = durable.get_many(namespace, walked)
        now = now_ms()
        puts: list[RecordWrite] = []
        deletes: list[tuple[str, str]] = []
        signals: list[Signal] = []
        failed: list[dict[str, Any]] = []
        for record in records:
            if not op.filter.matches(record.value):
                continue
            if op.action == "delete":
                deletes.append((namespace, record.id))
                continue
            try:
                job = Job.from_value(record.value)
                revive(job, now)
                puts.append(RecordWrite(job_namespace(queue), record.id, job.to_value()))
            except (OqronError, KeyError, TypeError, ValueError) as exc:
                failed.append({"queue": queue, "id": record.id, "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            deletes.append((namespace, record.id))
            if job.status == "waiting":
                signals.append(Signal(job.id, job.priority, None, job.lifo))
        done = len(deletes)
        advanced = Progress(
            queue_index=progress.queue_index + (next_cursor is None), cursor=next_cursor,
            scanned=progress.scanned + len(walked), done=progress.done + done, failed=progress.failed + len(failed),
            skipped=progress.skipped + len(walked) - done - len(failed), chunks=progress.chunks + 1,
            updated_at=now, errors=(progress.errors + failed)[:MAX_ERRORS_KEPT])
        durable.apply(puts=[*puts, RecordWrite(OPERATION_PROGRESS, op.id, advanced.to_value())], deletes=deletes)
        return lambda: self.engine.hot.signal(queue, signals, now)


def chunk_walk(target: str) -> Callable[[Any, Operation, int], Callable[[], None]] | None:
    """The chunk step of a replay or a resend (None: dead letters, the runner's own); their
    modules (replay's, webhooks') load with the first such operation, not with every leader."""
    if target == TARGET_RUNS:
        from .replaying import replay_chunk

        return replay_chunk
    if target == TARGET_DELIVERIES:
        from .resending import resend_chunk

        return resend_chunk
    if target == TARGET_RUN_IDS:
        from .replaying_ids import replay_ids_chunk

        return replay_ids_chunk
    return None

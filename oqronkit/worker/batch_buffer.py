"""A batch queue's held attempts, by group key, and how many batch calls run.

It stands in for :class:`QueueBuffer` on a queue declared with ``batch=``: the claim
loop, the heartbeat and the drain see the same ``inflight``, ``running`` and conditions;
only holding and taking differ (a whole batch of one key at a time). Every method runs
with the worker's lock held, as for the plain buffer.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..queues.runs import ErrorValue, describe_error
from .buffer import SETTLE_BACKLOG_FLOOR, QueueBuffer
from .inflight import Inflight

if TYPE_CHECKING:
    from ..queues.batch import Batch
    from ..queues.queue import Queue


@dataclass(eq=False)
class Held:
    """A held attempt of a batch queue: when it arrived (max_wait counts from the
    oldest of its key) and why it cannot join a batch, if its key could not be made."""

    inflight: Inflight
    since: float
    broken: ErrorValue | None = None


@dataclass(eq=False)
class RunningBatch:
    """One handler call's attempts; ``ended`` once its call slot was given back (the
    handler returned, or a timeout or lost lease handed the slot to a new thread)."""

    id: str
    key: Hashable
    attempts: list[Inflight]
    broken: list[tuple[Inflight, ErrorValue]] = field(default_factory=list)
    ended: bool = False
    abandoned: bool = False


class BatchBuffer(QueueBuffer):
    """``concurrency`` counts handler calls; each may take ``batch.size`` jobs."""

    def __init__(self, queue: Queue, *, concurrency: int, lock: threading.RLock) -> None:
        super().__init__(queue, concurrency=concurrency, lock=lock)
        assert queue.batch is not None, "a batch buffer serves a queue declared with batch="
        self.batch: Batch = queue.batch
        #: Held attempts by group key, oldest key first; each key's attempts in claim order.
        self.groups: OrderedDict[Hashable, deque[Held]] = OrderedDict()
        self.held_count = 0
        self.calls = 0  # handler calls running now (at most ``concurrency``)
        self.running_batches: dict[Inflight, RunningBatch] = {}

    # -- what the claim loop calls --------------------------------------------------------

    def free_slots(self) -> int:
        """Claim up to two batches per call slot (one running, one filling), no
        further ahead of the finisher than a few batches of outcomes."""
        capacity = self.concurrency * self.batch.size
        free = 2 * capacity - self.running - self.held_count
        backlog = max(2 * capacity, SETTLE_BACKLOG_FLOOR)
        free = min(free, backlog + 2 * capacity - len(self.inflight))
        return self._throttled(free)

    def hold(self, held: list[Inflight]) -> None:
        """Keep claimed attempts under their group key. A key function that raises
        marks its attempt broken: it is failed alone with that error, never grouped."""
        now = time.monotonic()
        for inflight in held:
            self.inflight[inflight.job.id] = inflight
            entry = Held(inflight, now)
            try:
                key: Hashable = self.batch.key_of(inflight.job.data)
            except Exception as exc:  # the user's group_by; its error is the attempt's
                entry.broken = describe_error(exc)
                key = ("broken", inflight.job.id)
            self.groups.setdefault(key, deque()).append(entry)
        self.held_count += len(held)
        self.work.notify_all()

    # -- what the batch slots call ----------------------------------------------------------

    def next_batch(self, now: float) -> tuple[bool, Hashable, float] | None:
        """``(True, key, 0)`` to take ``key`` now (it holds ``size`` attempts, or its
        oldest waited ``max_wait``), ``(False, None, seconds)`` to wait that long for
        one, None when nothing is held or every call slot is busy."""
        self._drop_settled()
        if not self.groups or self.calls >= self.concurrency:
            return None
        size, max_wait = self.batch.size, self.batch.max_wait
        soonest = max_wait
        full: list[Hashable] = []  # a list, not a sentinel: None is a key (no group_by)
        for key, entries in self.groups.items():  # oldest key first
            waited = now - entries[0].since
            if waited >= max_wait or entries[0].broken is not None:
                return True, key, 0.0  # overdue goes before full: a busy key never starves the others
            if not full and len(entries) >= size:
                full.append(key)
            soonest = min(soonest, max_wait - waited)
        if full:
            return True, full[0], 0.0
        return False, None, soonest

    def take_batch(self, key: Hashable, batch_id: str) -> RunningBatch:
        """Start up to ``size`` attempts of ``key`` as one call."""
        entries = self.groups[key]
        taken: list[Held] = []
        while entries and len(taken) < self.batch.size:
            taken.append(entries.popleft())
        if not entries:
            del self.groups[key]
        self.held_count -= len(taken)
        batch = RunningBatch(batch_id, key, [])
        for entry in taken:
            inflight = entry.inflight
            if inflight.settled:  # its lease was lost while held
                continue
            inflight.started = True
            self.running += 1
            if entry.broken is not None:
                batch.broken.append((inflight, entry.broken))
            else:
                batch.attempts.append(inflight)
                self.running_batches[inflight] = batch
        self.calls += 1
        self.room.notify()
        return batch

    def end_call(self, batch: RunningBatch) -> bool:
        """Give back the batch's call slot, once; False if it was already given back."""
        if batch.ended:
            return False
        batch.ended = True
        self.calls -= 1
        for inflight in batch.attempts:
            self.running_batches.pop(inflight, None)
        self.work.notify()
        return True

    # -- the plain buffer's interface ------------------------------------------------------

    def take(self) -> Inflight | None:
        return None  # batch slots take whole batches (take_batch)

    def take_all_held(self) -> list[Inflight]:
        held = [entry.inflight for entries in self.groups.values() for entry in entries]
        self.groups.clear()
        self.held_count = 0
        return held

    def _drop_settled(self) -> None:
        """Forget held attempts settled while held (a lost lease): nothing to run."""
        for key in [k for k, entries in self.groups.items() if entries[0].inflight.settled]:
            entries = self.groups[key]
            while entries and entries[0].inflight.settled:
                entries.popleft()
                self.held_count -= 1
            if not entries:
                del self.groups[key]

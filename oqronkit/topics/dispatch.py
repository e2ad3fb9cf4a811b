"""Handing each consumer group's new messages to its delivery queue.

A group advances a cursor over the log; a message becomes a job of the group's queue
only when the group is ready for it (the queue holds fewer than :data:`WINDOW`
deliveries), and the job is deleted when the delivery completes. So a group that keeps
up costs one job row per message only while the message is in flight, never a row per
message per group for the log's whole retention.

One process at a time dispatches a group (a hot-plane lock, renewed every pass); any
process that consumes the group takes over when the lock lapses. An idle dispatcher
sleeps until a publish to its topic wakes it (:mod:`.wake`) or its poll comes round. A pass reads past the
cursor, adds the jobs (their ids are the message ids, so a pass repeated after a crash
or a lost lock finds them already there while they are in flight), then moves the
cursor by compare-and-set on the group's version, in two steps: it first claims the
range it is about to hand over (``pending``, with its worker id), then adds the jobs,
then moves the cursor past the range. Two dispatchers (a lock lost to a hot-plane
flush) never hand over one range twice: the second finds the first's claim and waits.
Delivery is at least once: a dispatcher that dies between claiming and moving the
cursor leaves its claim, which the next dispatcher takes over after
:data:`PENDING_TIMEOUT_MS` and hands over again (a delivery still in flight is found
by its id and not added twice; one that completed meanwhile runs a second time).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from ..backends.types import StoredRecord
from ..clock import now_ms
from ..errors import OqronError
from ..queues.queue import QueueHost
from . import groups, log
from .ordering import KeyChains
from .subscription import Message, Subscription
from .wake import Wakeup

logger = logging.getLogger(__name__)
#: Deliveries a group may have in its queue (waiting, retrying or running) before its
#: dispatcher waits: the rows a slow group costs, and how far a crash may repeat work.
WINDOW = 1000
BATCH = 500
#: The idle poll: how soon a message is found when its wake was lost (or the plane has none).
IDLE_WAIT = 0.1
LOCK_TTL_MS = 10_000
#: A range claimed by a dispatcher that has not handed it over within this long is
#: taken over (its dispatcher died): its deliveries are added again (at least once).
PENDING_TIMEOUT_MS = 30_000


class Dispatcher:
    def __init__(self, engine: QueueHost, subscriptions: list[Subscription], worker_id: str, *,
                 idle_wait: float = IDLE_WAIT) -> None:
        self.engine = engine
        self.subscriptions = subscriptions
        self.worker_id = worker_id
        self.idle_wait = idle_wait
        self._failing: set[str] = set()  # groups whose last pass failed (logged once until they recover)
        self._chains: dict[str, KeyChains] = {}  # ordered groups whose lock this process holds
        #: Monotonic times of the last pass that handed messages over, and of the start of
        #: the last that found nothing to do (None before the first): a burst worker stops
        #: only once a quiet pass began after the last hand-over (:meth:`quiet_since_move`).
        self.last_move = 0.0
        self.last_quiet_pass: float | None = None

    def loop(self, stop: threading.Event) -> None:
        wakeup = Wakeup(self.engine.hot, (sub.topic for sub in self.subscriptions))
        try:
            wakeup.wait_ready()
            while not stop.is_set():
                wakeup.clear()  # a publish committed during the pass wakes the next wait
                started = time.monotonic()
                moved = sum(self._pass(sub) for sub in self.subscriptions)
                if moved:
                    self.last_move = time.monotonic()
                else:
                    self.last_quiet_pass = started
                    wakeup.wait(self.idle_wait, stop)
        finally:
            wakeup.close()
            self._release()

    def quiet_since_move(self) -> bool:
        """Whether a pass that found nothing to hand over began after the last hand-over."""
        quiet = self.last_quiet_pass
        return quiet is not None and quiet > self.last_move

    def _pass(self, sub: Subscription) -> int:
        try:
            moved = self.dispatch(sub)
        except OqronError as exc:
            if sub.queue.name not in self._failing:
                logger.warning("could not dispatch %s: %s", sub.queue.name, exc, extra={"action": "topic.dispatch"})
                self._failing.add(sub.queue.name)
            return 0
        self._failing.discard(sub.queue.name)
        return moved

    def dispatch(self, sub: Subscription) -> int:
        """One pass for one group: the messages it moved past (0: nothing to do)."""
        hot, durable = self.engine.hot, self.engine.durable
        if not hot.acquire_lock(f"topic:{sub.queue.name}", self.worker_id, ttl_ms=LOCK_TTL_MS, now=now_ms()):
            self._chains.pop(sub.queue.name, None)  # another process dispatches it: its chains, not ours
            return 0
        group = groups.ensure(durable, sub.topic, sub.group, sub.partitions, sub.start_from)
        if group["paused"]:
            return 0
        pending = group.get("pending")
        read: dict[str, list[StoredRecord]] = {}  # the range's messages, when this pass read them
        if pending is not None:
            if pending["owner"] != self.worker_id and now_ms() - pending["at"] < PENDING_TIMEOUT_MS:
                return 0  # another dispatcher is handing this range over now
            target = pending["cursor"]  # ours, or left by a dispatcher that died: hand it over again
        else:
            found = self._next_range(sub, group, read)
            if found is None:
                return 0
            target = found
            claimed = groups.claim_range(durable, group, target, self.worker_id)
            if claimed is None:
                return 0  # the group changed meanwhile (a seek, another dispatcher)
            group = claimed
        items = self._deliveries(sub, group["cursor"], target, read)
        if items and sub.ordered:
            self._chains_of(sub).chain(durable, sub.queue.namespace, items)
        if items:
            sub.queue.add_bulk(items)
        moved = sum(target[p] - group["cursor"].get(p, -1) for p in target)
        return moved if groups.advance(durable, group, target) else 0

    def _next_range(self, sub: Subscription, group: groups.GroupValue,
                    read: dict[str, list[StoredRecord]]) -> dict[str, int] | None:
        """The cursor after the next batch the group has room for, or None; the
        messages of the batch, by partition, into ``read``."""
        depths = self.engine.hot.depths(sub.queue.name, now_ms())
        room = min(WINDOW - (depths.ready + depths.delayed + depths.active), BATCH)
        if room <= 0:
            return None
        target = dict(group["cursor"])
        for partition in range(sub.partitions):
            got = log.read(self.engine.durable, sub.topic, partition, after=target[str(partition)], limit=room)
            if got:
                target[str(partition)] = int(got[-1].value["offset"])
                read[str(partition)] = got
                room -= len(got)
            if room <= 0:
                break
        return target if target != group["cursor"] else None

    def _deliveries(self, sub: Subscription, cursor: dict[str, int], target: dict[str, int],
                    read: dict[str, list[StoredRecord]]) -> list[dict[str, Any]]:
        """The jobs of the messages after ``cursor`` up to ``target``, filtered (a
        partition in ``read`` is taken from there: the pass read exactly that range)."""
        items: list[dict[str, Any]] = []
        for partition, last in target.items():
            after = cursor.get(partition, -1)
            if partition in read:
                items += [item for r in read[partition] if _wanted(sub, item := _delivery(r))]
                continue
            while after < last:
                page = log.read(self.engine.durable, sub.topic, int(partition), after=after,
                                limit=min(last - after, BATCH))
                if not page:
                    break
                items += [item for r in page if int(r.value["offset"]) <= last
                          and _wanted(sub, item := _delivery(r))]
                after = int(page[-1].value["offset"])
        return items

    def _chains_of(self, sub: Subscription) -> KeyChains:
        chains = self._chains.get(sub.queue.name)
        if chains is None:
            chains = self._chains[sub.queue.name] = KeyChains()
            chains.rebuild(self.engine.durable, sub.queue.namespace)
        return chains

    def _release(self) -> None:
        for sub in self.subscriptions:
            try:
                self.engine.hot.release_lock(f"topic:{sub.queue.name}", self.worker_id)
            except OqronError:
                pass  # it lapses by its TTL


def _wanted(sub: Subscription, item: dict[str, Any]) -> bool:
    if sub.filter is None:
        return True
    message = Message.from_delivery(item["data"])
    try:
        return bool(sub.filter(message))
    except Exception:  # a filter that raises delivers the message: the handler decides
        logger.exception("the filter of %s raised on message %s; delivering it", sub.queue.name, message.id,
                         extra={"action": "topic.filter_failed"})
        return True


def _delivery(record: StoredRecord) -> dict[str, Any]:
    """The job of one delivery: a snapshot of the message (it runs even once pruned)."""
    value = record.value
    data = {"topic": value["topic"], "messageId": value["id"], "partition": value["partition"],
            "offset": value["offset"], "key": value.get("key"), "payload": value.get("payload"),
            "headers": value.get("headers") or {}, "publishedAt": value["publishedAt"],
            "correlationId": value.get("correlationId")}
    item: dict[str, Any] = {"data": data, "job_id": value["id"]}
    if value.get("correlationId"):
        item["correlation_id"] = value["correlationId"]
    run_at = value.get("runAt")
    if isinstance(run_at, int) and run_at > now_ms():
        item["run_at"] = run_at
    return item

"""``oqronkit.topic``: declare a topic, publish to it, subscribe consumer groups, and
steer a group (lag, pause, resume, seek, replay, its dead letters)."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, Literal

from ..bounds import MAX_CONCURRENCY
from ..declared import DeclaredByName, OnEngine, put_definition
from ..errors import ConfigurationError, InvalidJob
from ..namespaces import TOPIC, TOPIC_STATE
from ..queues.backoff import to_ms
from ..queues.queue import Queue, QueueHost, Registry
from . import groups, log, publish, wake
from .log import Draft
from .subscription import Message, Subscription, check_name, delivery_queue_name, subscribe, subscriptions_for

DEFAULT_RETENTION = timedelta(days=7)
_TOPICS: DeclaredByName[Topic] = DeclaredByName()


class Topic(OnEngine):
    """A named, partitioned, retained message log. Groups subscribe to it; each group
    receives every message, and a group's processes compete for its messages."""

    def __init__(self, name: str, *, partitions: int = 1, retention: float | timedelta | None = DEFAULT_RETENTION,
                 retention_count: int | None = None, ordering: Literal["none", "key"] = "none",
                 max_message_bytes: int | None = None, engine: QueueHost | None = None) -> None:
        self.name = check_name(name, "Topic")
        if not isinstance(partitions, int) or isinstance(partitions, bool) or not 1 <= partitions <= 256:
            raise ConfigurationError(f"Topic {name!r}: partitions must be an integer from 1 to 256.")
        if ordering not in ("none", "key"):
            raise ConfigurationError(f"Topic {name!r}: ordering must be 'none' or 'key', got {ordering!r}.")
        if retention_count is not None and (not isinstance(retention_count, int) or retention_count < 1):
            raise ConfigurationError(f"Topic {name!r}: retention_count must be a positive integer or None.")
        self.partitions = partitions
        self.retention_ms = to_ms(retention, what="retention")
        self.retention_count = retention_count
        self.ordering = ordering
        self.max_message_bytes = max_message_bytes
        self._engine = engine
        self._declared = False
        self._lock = threading.Lock()
        topics_for(self.registry)[name] = self

    def __repr__(self) -> str:
        return f"<Topic {self.name!r} partitions={self.partitions}>"

    # -- publishing --------------------------------------------------------------------

    def publish(self, payload: Any = None, **options: Any) -> str:
        """Append one message; its id. Options: ``key`` (same key, same partition),
        ``idempotency_key`` (a second publish returns the first message's id),
        ``headers`` (str -> str), ``correlation_id``, ``delay`` (seconds or timedelta)."""
        return self.publish_many([{"payload": payload, **options}])[0]

    def publish_many(self, items: Iterable[Any]) -> list[str]:
        """Append many messages, one durable transaction per partition touched. Each
        item is a payload or ``{"payload": ..., **options}``. Their ids, in order."""
        drafter = publish.Drafter(self.name, partitions=self.partitions,
                                  max_bytes=self.max_message_bytes or self.engine.config.max_record_bytes)
        drafted = [drafter(item) for item in items]
        if not drafted:
            return []
        self._declare()
        by_partition: dict[int, list[Draft]] = defaultdict(list)
        for partition, draft in drafted:
            by_partition[partition].append(draft)
        notify = wake.at_commit(self.engine, self.name)
        try:
            for partition, drafts in by_partition.items():
                log.append(self.engine.durable, self.name, partition, drafts, notify=notify)
        finally:
            if notify is None:
                wake.request(self.engine, self.name)  # one per call; also for the partitions written before a failure
        return [draft.id for _, draft in drafted]

    def publish_on_commit(self, payload: Any = None, *, using: str | None = None, **options: Any) -> None:
        """Publish once the surrounding Django transaction commits (nothing if it rolls back)."""
        from django.db import transaction  # only meaningful inside a Django project

        transaction.on_commit(lambda: self.publish(payload, **options), using=using)

    def _declare(self) -> None:
        """Record the topic's definition and state once per process."""
        if self._declared:
            return
        with self._lock:
            if self._declared:
                return
            durable = self.engine.durable
            now = put_definition(durable, TOPIC, self.name, {
                "name": self.name, "partitions": self.partitions, "retentionMs": self.retention_ms,
                "retentionCount": self.retention_count, "ordering": self.ordering,
                "maxMessageBytes": self.max_message_bytes})
            durable.insert(TOPIC_STATE, self.name, {"topic": self.name, "paused": False, "version": 1,
                                                    "updatedAt": now})
            self._declared = True

    # -- consumer groups -----------------------------------------------------------------

    def subscribe(self, group: str, *, concurrency: int = 5, start_from: groups.Position = "latest",
                  filter: Callable[[Message], bool] | None = None, retries: int = 3, backoff: Any = None,
                  dead_letter: bool = True, timeout: float | timedelta | None = None, lease: float | timedelta = 30,
                  ) -> Callable[[Callable[..., Any]], Subscription]:
        """Decorator: ``@orders.subscribe("billing")`` runs the function for every
        message of the topic, once per group (processes of one group compete)."""
        if not isinstance(concurrency, int) or not 1 <= concurrency <= MAX_CONCURRENCY:
            raise ConfigurationError(f"{self.name}/{group}: concurrency must be 1..{MAX_CONCURRENCY}.")
        groups.describe(start_from)
        options = {"concurrency": concurrency, "retries": retries, "backoff": backoff, "dead_letter": dead_letter,
                   "timeout": timeout, "lease": lease}

        def decorate(fn: Callable[..., Any]) -> Subscription:
            if not callable(fn):
                raise ConfigurationError(f"{self.name}/{group}: the handler must be callable.")
            return subscribe(self.name, self.partitions, group, fn, engine=self._engine, start_from=start_from,
                             filter=filter, ordered=self.ordering == "key", options=options)
        return decorate

    def group_queue(self, group: str) -> Queue:
        """The delivery queue of ``group``: its jobs are the deliveries in flight or
        failed; its dead letters (``list_jobs(dead=True)``, ``retry``, ``retry_many``)
        the deliveries that ran out of attempts."""
        name = delivery_queue_name(self.name, check_name(group, "Group"))
        return self.registry.queues.get(name) or Queue(name, engine=self._engine)

    def lag(self, group: str) -> dict[str, Any]:
        """Messages published but not yet handed to ``group``, per partition and in all,
        and its deliveries still in its queue (in flight, waiting or retrying)."""
        found = self._group(group)
        partitions = groups.lag(self.engine.durable, self.name, found, self.partitions)
        return {"partitions": partitions, "total": sum(partitions.values()),
                "inQueue": self.engine.durable.count(self.group_queue(group).namespace)}

    def pause(self, group: str) -> None:
        """Stop handing messages to ``group`` and stop running its deliveries."""
        self._group(group)
        groups.update(self.engine.durable, self.name, group, self.partitions, paused=True)
        self.group_queue(group).pause()

    def resume(self, group: str) -> None:
        groups.update(self.engine.durable, self.name, group, self.partitions, paused=False)
        self.group_queue(group).resume()

    def seek(self, group: str, position: groups.Position) -> int:
        """Move ``group`` to ``position`` ("earliest", "latest", an offset or a
        datetime): later messages are handed to it again (or skipped). The number of
        retained messages it will receive from there."""
        self._group(group)
        cursor = groups.resolve(self.engine.durable, self.name, self.partitions, position)
        # A range a dispatcher is handing over is dropped: it resumes from the new cursor.
        changed = groups.update(self.engine.durable, self.name, group, self.partitions, cursor=cursor, pending=None)
        return sum(groups.lag(self.engine.durable, self.name, changed, self.partitions).values())

    def replay(self, group: str, from_: groups.Position) -> int:
        """Deliver again every retained message from ``from_`` (an offset or a
        datetime) to ``group``: :meth:`seek` backwards. The number of messages."""
        return self.seek(group, from_)

    def _group(self, group: str) -> groups.GroupValue:
        found = groups.load(self.engine.durable, self.name, check_name(group, "Group"))
        if found is not None:
            return found
        declared = subscriptions_for(self.registry).get(delivery_queue_name(self.name, group))
        if declared is None:
            raise InvalidJob(f"{self.name} has no consumer group {group!r}: subscribe it (a worker creates it).")
        return groups.ensure(self.engine.durable, self.name, group, self.partitions, declared.start_from)


def topics_for(registry: Registry) -> dict[str, Topic]:
    """The topics declared against ``registry``, by name."""
    return _TOPICS.of(registry)


def topic(name: str, **options: Any) -> Topic:
    """Declare (or look up) a topic on the default engine."""
    return _TOPICS.declare_or_get(Topic, name, options)

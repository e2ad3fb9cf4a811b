"""A consumer group's subscription in this process: its delivery queue and what the
handler receives.

A group's deliveries are jobs of the queue ``<topic>@<group>`` (job namespace
``queue_job:<topic>@<group>``, dead letters ``queue_dlq:<topic>@<group>``), so claiming,
leases, retries, backoff, dead letters and the run per attempt are the queue engine's.
A delivery's job carries a snapshot of its message, so it runs even once retention has
pruned the message from the log. Each attempt's run has ``module`` and ``trigger``
``topic`` and names its ``topic``, ``group`` and ``messageId``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from weakref import WeakKeyDictionary

from ..errors import ConfigurationError
from ..queues.jobs import Job
from ..queues.queue import Queue, QueueHost, Registry

if TYPE_CHECKING:
    from .groups import Position

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SUBSCRIPTIONS: WeakKeyDictionary[Registry, dict[str, Subscription]] = WeakKeyDictionary()


def check_name(name: Any, what: str) -> str:
    """A topic or group name: 1-64 letters, digits, '_', '.' or '-', starting with a
    letter or digit ('@' joins the two in the delivery queue's name)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigurationError(f"{what} name {name!r} must be 1-64 letters, digits, '_', '.' or '-', "
                                 "starting with a letter or digit.")
    return name


def delivery_queue_name(topic: str, group: str) -> str:
    return f"{topic}@{group}"


class JobContext(Protocol):
    """What a delivery's handler context wraps: the worker's job context."""

    data: Any
    attempt: int
    max_attempts: int
    run_id: str

    @property
    def cancelled(self) -> bool: ...

    def log(self, level: str, msg: str) -> None: ...

    def progress(self, percent: float, label: str | None = None) -> None: ...


@dataclass(frozen=True, slots=True)
class Message:
    """A delivered message, as the handler sees it."""

    id: str
    topic: str
    key: str | None
    partition: int
    offset: int
    payload: Any
    headers: dict[str, str]
    published_at: int
    correlation_id: str | None

    @classmethod
    def from_delivery(cls, data: dict[str, Any]) -> Message:
        """The message a delivery job's data is a snapshot of."""
        return cls(id=data["messageId"], topic=data["topic"], key=data.get("key"), partition=data["partition"],
                   offset=data["offset"], payload=data.get("payload"), headers=data.get("headers") or {},
                   published_at=data["publishedAt"], correlation_id=data.get("correlationId"))


class TopicContext:
    """The ``ctx`` of a subscription handler: the message, and the attempt's job context
    (``log``, ``progress``, ``cancelled``, ``attempt``)."""

    def __init__(self, job_ctx: JobContext, group: str) -> None:
        self.message = Message.from_delivery(job_ctx.data)
        self.data: Any = self.message.payload
        self.group = group
        self.attempt = job_ctx.attempt
        self.max_attempts = job_ctx.max_attempts
        self.run_id = job_ctx.run_id
        self._job_ctx = job_ctx

    @property
    def cancelled(self) -> bool:
        return self._job_ctx.cancelled

    def log(self, level: str, msg: str) -> None:
        self._job_ctx.log(level, msg)

    def progress(self, percent: float, label: str | None = None) -> None:
        self._job_ctx.progress(percent, label)


@dataclass(eq=False)
class Subscription:
    """One consumer group of one topic, consumed in this process."""

    topic: str
    group: str
    partitions: int
    start_from: Position
    filter: Callable[[Message], bool] | None
    queue: Queue
    ordered: bool = False  # ordering="key": one message of a key at a time, in offset order


def subscriptions_for(registry: Registry) -> dict[str, Subscription]:
    """The subscriptions declared against ``registry``, by delivery queue name."""
    found = _SUBSCRIPTIONS.get(registry)
    if found is None:
        found = _SUBSCRIPTIONS[registry] = {}
    return found


def subscribe(topic: str, partitions: int, group: str, fn: Callable[..., Any], *, engine: QueueHost | None,
              start_from: Position, filter: Callable[[Message], bool] | None, ordered: bool,
              options: dict[str, Any]) -> Subscription:
    """Declare the group's delivery queue with ``fn`` as its handler (through a
    :class:`TopicContext`)."""
    check_name(group, "Group")
    if filter is not None and not callable(filter):
        raise ConfigurationError(f"{topic}/{group}: filter must be a callable taking the message.")

    deliver: Callable[[JobContext], Any]
    if inspect.iscoroutinefunction(fn):
        async def deliver_async(job_ctx: JobContext) -> Any:
            return await fn(TopicContext(job_ctx, group))
        deliver = deliver_async
    else:
        def deliver_sync(job_ctx: JobContext) -> Any:
            return fn(TopicContext(job_ctx, group))
        deliver = deliver_sync

    deliver.__qualname__ = f"{getattr(fn, '__qualname__', 'handler')}[{topic}@{group}]"
    deliver.__module__ = getattr(fn, "__module__", __name__)
    queue = Queue(delivery_queue_name(topic, group), handler=deliver, engine=engine, **options)
    queue.module = "topic"
    queue.trigger = "topic"
    queue.run_fields = _run_fields
    subscription = Subscription(topic=topic, group=group, partitions=partitions, start_from=start_from,
                                filter=filter, queue=queue, ordered=ordered)
    subscriptions_for(queue.registry)[queue.name] = subscription
    return subscription


def _run_fields(job: Job) -> dict[str, Any]:
    data = job.data if isinstance(job.data, dict) else {}
    return {"topic": data.get("topic"), "group": job.queue.partition("@")[2], "messageId": data.get("messageId")}

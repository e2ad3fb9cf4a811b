"""Lifecycle signals: plain callables called once per job event, registered on one queue
(``queue(..., on={"completed": fn})``, ``q.on("completed", fn)``) or on every queue of
an engine (``oqronkit.on("dead", fn)``, ``engine.on("dead", fn)``).

Where each event fires (the process that observed it, after its durable write):

* ``enqueued``, and ``cancelled`` of a job not yet claimed: in the process that called
  ``add``/``cancel``, on the caller's thread, before the call returns;
* ``started``, ``completed``, ``failed``, ``retried``, ``dead``, and ``cancelled`` of a
  claimed job (or one skipped by its ``condition``): in the worker that ran it;
* ``stalled`` (then ``retried`` or ``dead``): in the leader's process, where the rescuer
  and the reconciler run.

Engine threads never call a callback themselves: they hand the event to the process's
one ``oqron-signals`` thread, which calls callbacks in the order events were observed,
so a slow callback delays later callbacks, never settling or claiming. A callback that
raises is logged (event, queue, job id) and swallowed.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, overload

from .errors import ConfigurationError
from .queues.jobs import Job
from .queues.runs import ErrorValue


class Observed(Protocol):
    """A queue as emitting needs it (:class:`oqronkit.queues.queue.Queue`; this module stands below it)."""

    @property
    def lifecycle(self) -> Any: ...  # gates.QueueHooks, whose ``listeners`` are the queue's own


class RegistryLike(Protocol):
    """A registry as emitting needs it (:class:`oqronkit.queues.queue.Registry`)."""

    listeners: Listeners

    @property
    def queues(self) -> Any: ...  # name -> Queue

logger = logging.getLogger(__name__)
EVENTS = ("enqueued", "started", "retried", "completed", "failed", "dead", "stalled", "cancelled")
"""The lifecycle events a callback (``oqronkit.on``, ``Queue.on``) or a Django signal can follow."""
#: Events waiting for the signals thread; past this they are dropped (logged), never block the engine.
MAX_PENDING = 100_000


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs several times more per event
class Event:
    """What a callback receives: the event's name, the queue, the job as it stood when
    the event happened, and the attempt's output, error or the reason, where there is one."""

    name: str
    queue: str
    job: Job
    output: Any = None
    error: ErrorValue | None = None
    reason: str | None = None

    @property
    def job_id(self) -> str:
        return self.job.id

    @property
    def attempt(self) -> int:
        return self.job.attempts


Callback = Callable[[Event], object]
#: ``on=``: event name to one callback or several.
CallbackMap = Mapping[str, Callback | Sequence[Callback]]


def check_event(event: Any) -> str:
    if event not in EVENTS:
        raise ConfigurationError(f"Unknown lifecycle event {event!r}; one of: {', '.join(EVENTS)}.")
    return str(event)


class Listeners:
    """Callbacks by event. ``any`` stays False until one is added: the hot path's only check."""

    def __init__(self) -> None:
        self._by_event: dict[str, tuple[Callback, ...]] = {}
        self._lock = threading.Lock()
        self.any = False

    def add(self, event: str, fn: Callback) -> None:
        check_event(event)
        if not callable(fn):
            raise ConfigurationError(f"A {event!r} callback must be callable, got {fn!r}.")
        with self._lock:  # copy on write: emitters read the tuple without the lock
            self._by_event[event] = (*self._by_event.get(event, ()), fn)
            self.any = True

    def remove(self, event: str, fn: Callback) -> bool:
        """Drop one registration of ``fn``; False when it was not registered."""
        with self._lock:
            current = list(self._by_event.get(check_event(event), ()))
            if fn not in current:
                return False
            current.remove(fn)
            self._by_event[event] = tuple(current)
            self.any = any(self._by_event.values())
            return True

    def of(self, event: str) -> tuple[Callback, ...]:
        return self._by_event.get(event, ())

    def add_all(self, on: CallbackMap | None) -> None:
        """``on``: a mapping of event to a callable or a list of callables."""
        if on is None:
            return
        if not hasattr(on, "items"):
            raise ConfigurationError(f"on= must map event names to callables, got {on!r}.")
        for event, fns in on.items():
            for fn in (fns if isinstance(fns, (list, tuple)) else (fns,)):
                self.add(event, fn)


@overload
def register(listeners: Listeners, event: str, fn: None = None) -> Callable[[Callback], Callback]: ...
@overload
def register(listeners: Listeners, event: str, fn: Callback) -> Callback: ...
def register(listeners: Listeners, event: str, fn: Callback | None = None) -> Any:
    """Add ``fn`` for ``event``; without ``fn``, a decorator that does."""
    check_event(event)
    if fn is not None:
        listeners.add(event, fn)
        return fn

    def decorate(f: Callback) -> Callback:
        listeners.add(event, f)
        return f
    return decorate


class Observable:
    """``q.on(event, fn)`` on a queue (mixed into :class:`~oqronkit.queues.queue.Queue`)."""

    lifecycle: Any  # the queue's gates.QueueHooks

    def on(self, event: str, fn: Callback | None = None) -> Any:
        """Call ``fn(event)`` on ``event`` of this queue's jobs, in the process where it
        happens (see :mod:`oqronkit.lifecycle`); usable as ``@q.on("completed")``."""
        return register(self.lifecycle.listeners, event, fn)


# -- emitting ----------------------------------------------------------------------------


def emit(registry: RegistryLike, queue: Observed | None, event: str, job: Job, *, output: Any = None,
         error: ErrorValue | None = None, reason: str | None = None, inline: bool = False) -> None:
    """Fire ``event`` for ``job``: on the caller's thread when ``inline`` (calls a user
    made), else on the signals thread. Costs two attribute reads when nothing listens."""
    own = queue.lifecycle.listeners if queue is not None else None
    if not registry.listeners.any and (own is None or not own.any):
        return
    callbacks = (own.of(event) if own is not None else ()) + registry.listeners.of(event)
    if not callbacks:
        return
    fired = Event(event, job.queue, job, output, error, reason)
    if inline:
        _call_all(callbacks, fired)
    else:
        _dispatcher.put(callbacks, fired)


def emit_many(registry: RegistryLike, queue: Observed | None, event: str, jobs: Iterable[Job], *,
              reason: str | None = None, inline: bool = False) -> None:
    own = queue.lifecycle.listeners if queue is not None else None
    if not registry.listeners.any and (own is None or not own.any):
        return
    for job in jobs:
        emit(registry, queue, event, job, reason=reason, inline=inline)


def emit_by_name(registry: RegistryLike, event: str, job: Job, **details: Any) -> None:
    """Fire from a process that may not declare the queue (the leader's rescuer)."""
    emit(registry, registry.queues.get(job.queue), event, job, **details)


def emit_now(queue: Any, event: str, job: Job, **details: Any) -> None:
    """Fire on the caller's thread, from a method of the (declared) queue ``queue``."""
    emit(queue.registry, queue, event, job, inline=True, **details)


def fire_stalled(registry: RegistryLike, job: Job, why: str, then: str, reason: str) -> None:
    """A lapsed lease counted (rescuer, reconciler): ``stalled``, then ``retried`` or ``dead``."""
    error: ErrorValue | None = job.last_error
    emit_by_name(registry, "stalled", job, error=error, reason=why)
    emit_by_name(registry, then, job, error=error, reason=reason)


def _call_all(callbacks: tuple[Callback, ...], event: Event) -> None:
    for fn in callbacks:
        try:
            fn(event)
        except Exception:  # a callback must never break the engine or the caller's add
            logger.exception("%s callback %s failed for job %s/%s", event.name, getattr(fn, "__qualname__", fn),
                             event.queue, event.job.id,
                             extra={"action": "lifecycle.callback_failed", "event": event.name,
                                    "queue": event.queue, "job_id": event.job.id})


def drain(timeout: float = 5.0) -> bool:
    """Wait until every event handed to the signals thread has been called back (a
    worker's stop; tests). False when ``timeout`` passed first."""
    return _dispatcher.drain(timeout)


class _Dispatcher:
    """The process's one signals thread and its FIFO of events. ``put`` takes no lock unless
    the thread sleeps: a deque's append is atomic, and the thread drains in batches."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: deque[tuple[tuple[Callback, ...], Event]] = deque()
        self._idle = False  # the thread waits for work: put must wake it
        self._busy = False  # a batch is being called back (drain waits for it)
        self._thread: threading.Thread | None = None
        self._dropped = 0

    def put(self, callbacks: tuple[Callback, ...], event: Event) -> None:
        if len(self._pending) >= MAX_PENDING:
            self._drop(event)
            return
        self._pending.append((callbacks, event))
        # Read after the append; the thread sets _idle before it looks at the deque.
        if self._idle or self._thread is None:
            with self._cond:
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(target=self._loop, name="oqron-signals", daemon=True)
                    self._thread.start()
                self._cond.notify_all()

    def _drop(self, event: Event) -> None:
        self._dropped += 1
        if self._dropped == 1 or self._dropped % 10_000 == 0:
            logger.error("lifecycle callbacks are %d events behind; %d event(s) dropped so far (%s of %s)",
                         MAX_PENDING, self._dropped, event.name, event.job.id,
                         extra={"action": "lifecycle.dropped", "event": event.name})

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._idle = True
                while not self._pending:
                    self._busy = False
                    self._cond.notify_all()  # drain() waiters
                    self._cond.wait()
                self._idle, self._busy = False, True
            while self._pending:
                callbacks, event = self._pending.popleft()
                try:
                    _call_all(callbacks, event)
                except BaseException:  # SystemExit in a callback: the thread lives on
                    logger.exception("a %s callback raised a BaseException", event.name,
                                     extra={"action": "lifecycle.callback_failed", "event": event.name})

    def drain(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def forked(self) -> None:
        """In a forked child: the parent's events are the parent's, its thread is gone."""
        self.__init__()  # type: ignore[misc]


_dispatcher = _Dispatcher()
os.register_at_fork(after_in_child=_dispatcher.forked)

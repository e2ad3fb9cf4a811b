"""Task queues: declaring a queue and adding jobs to it.

``add`` is durable first: the job is written to ``oqron_jobs`` before the hot plane is
signalled, so a hot-plane outage never loses it (the reconciler signals it later).
Control actions (pause, cancel, retry, ...) live in :mod:`oqronkit.queues.control`.

A queue stands below the engine that builds it: it needs only a :class:`QueueHost` (the
engine's configuration, planes and registry), and finds the process's default engine
through the lookup :mod:`oqronkit.engine` registers on import.
"""

from __future__ import annotations

import inspect
import logging
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any, Literal, NamedTuple, Protocol

from ..backends.hot_types import Signal
from ..bounds import MAX_ATTEMPTS, MAX_CONCURRENCY
from ..clock import now_ms
from ..codec import check_text, text_problem
from ..config import OqronConfig
from ..durable import RecordWrite
from ..errors import BackendUnavailable, ConfigurationError, DuplicateRecord, InvalidJob
from ..lifecycle import CallbackMap, Listeners, Observable, emit_many
from ..planes import Planes
from ..telemetry.tracing import producer_span, record_jobs
from ..transactions import joining, signal_when_committed, to_join, when_committed
from .backoff import Backoff, make_backoff, to_ms
from .batch import Batch, check_batch
from .control import QueueControl
from .enqueue import build_job, check_priority, check_timeout, options_from, plain_job_rows, reject_cycles
from .gates import PausePolicy, QueueHooks, paused_add
from .jobs import Job
from .limits import check_queue_limits
from .one_trip import add_in_one_trip
from .windows import WINDOW_OPTIONS, add_with_windows

logger = logging.getLogger(__name__)
Strategy = Literal["fifo", "lifo", "priority"]
Hook = Callable[..., Any]


class Registry:
    """The queues (and, later, crons and topics) declared in this process."""

    def __init__(self) -> None:
        self.queues: dict[str, Queue] = {}
        self.listeners = Listeners()  # lifecycle callbacks of every queue (oqronkit.on, engine.on)
        self._lock = threading.Lock()

    def add_queue(self, queue: Queue) -> None:
        with self._lock:
            existing = self.queues.get(queue.name)
            if existing is not None and existing is not queue and existing.fn is not None \
                    and queue.fn is not None and existing.fn is not queue.fn:
                raise ConfigurationError(
                    f"Queue {queue.name!r} is declared twice with different handlers; "
                    "declare each queue once and import it where needed."
                )
            if existing is None or existing.fn is None or existing is queue:
                self.queues[queue.name] = queue


default_registry = Registry()


class QueueHost(Planes, Protocol):
    """What a queue needs from the engine it is declared on: the configuration (record
    bounds), the two planes, and the registry the queue joins."""

    @property
    def config(self) -> OqronConfig: ...

    @property
    def registry(self) -> Registry: ...


_default_engine_lookup: Callable[[], QueueHost] | None = None


def set_default_engine_lookup(lookup: Callable[[], QueueHost]) -> None:
    """How a queue declared without an engine finds the process's default engine;
    :mod:`oqronkit.engine` (which builds queues, so stands above this module) sets it
    when imported, and ``import oqronkit`` always imports it."""
    global _default_engine_lookup
    _default_engine_lookup = lookup


def default_engine() -> QueueHost:
    """The process's default engine (looked up on each use: ``configure`` may replace it)."""
    if _default_engine_lookup is None:
        raise ConfigurationError("No default engine: oqronkit.engine, which sets its lookup, is not imported.")
    return _default_engine_lookup()


class Queue(QueueControl, Observable):
    """A named queue of jobs. Give it a ``handler`` to consume it in this process's
    workers, or leave it publisher-only and consume it elsewhere with
    :func:`oqronkit.worker`."""

    def __init__(
        self,
        name: str,
        *,
        handler: Callable[..., Any] | None = None,
        concurrency: int = 5,
        strategy: Strategy = "fifo",
        retries: int = 3,
        backoff: Any = None,
        timeout: float | timedelta | None = None,
        dead_letter: bool = True,
        priority: int = 0,
        tags: Sequence[str] = (),
        remove_on_complete: float | timedelta | None = None,
        max_stalls: int = 2,
        lease: float | timedelta = 30,
        throttle: tuple[int, float] | None = None,
        prefetch: int | None = None,
        rate_limit: tuple[int, float] | None = None,
        global_concurrency: int | None = None,
        batch: Batch | None = None,
        on_complete: Hook | None = None,
        on_failed: Hook | None = None,
        on_dead: Hook | None = None,
        on: CallbackMap | None = None,
        condition: Hook | None = None,
        before_run: Hook | None = None,
        on_pause: PausePolicy = "hold", replayable: bool = False,
        engine: QueueHost | None = None,
    ) -> None:
        _check_limits(name, strategy=strategy, concurrency=concurrency, max_stalls=max_stalls, retries=retries,
                      prefetch=prefetch, throttle=throttle)
        batched = check_batch(name, batch)  # None: one job per handler call
        limits = check_queue_limits(name, rate_limit=rate_limit, global_concurrency=global_concurrency,
                                    prefetch=prefetch, batch=batched)
        defaults = _job_defaults(name, timeout=timeout, remove_on_complete=remove_on_complete, lease=lease,
                                 backoff=backoff, priority=priority, tags=tags)
        self.name = name
        self.module = "queue"  # "worker" when consumed through oqronkit.worker(); stamped on runs
        self.trigger = "queue"  # "topic" for a consumer group's deliveries; stamped on runs
        #: Fields added to each attempt's run (a topic delivery names its message).
        self.run_fields: Callable[[Job], dict[str, Any]] | None = None
        self.fn: Callable[..., Any] | None = None
        self.is_async = False
        self.concurrency = concurrency
        self.strategy: Strategy = strategy
        self.retries = retries
        self.backoff = defaults.backoff
        self.timeout_ms = defaults.timeout_ms
        self.dead_letter, self.replayable = dead_letter, replayable is True  # replayable: safe to run again
        self.priority = defaults.priority
        self.tags = tuple(tags)
        self.completed_run_ttl_ms = defaults.completed_run_ttl_ms
        self.max_stalls = max_stalls
        self.lease_ms = defaults.lease_ms
        self.throttle = throttle
        self.prefetch = prefetch  # None: sized from the observed handler time (worker/prefetch.py)
        #: Cluster-wide limits the hot plane enforces at claim and start time (limits.py).
        self.limits = limits
        self.batch = batched
        self.lifecycle = QueueHooks(name, on=on, on_complete=on_complete, on_failed=on_failed, on_dead=on_dead,
                                    condition=condition, before_run=before_run, on_pause=on_pause)
        self._engine = engine
        if handler is not None:
            self._set_handler(handler)
        self.registry.add_queue(self)

    def __repr__(self) -> str:
        return f"<Queue {self.name!r} {'consumer' if self.fn else 'publisher-only'}>"

    @property
    def engine(self) -> QueueHost:
        """The engine given at declaration, else the default one, looked up on each use
        so a later ``oqronkit.configure`` applies to queues declared before it."""
        if self._engine is not None:
            return self._engine
        return default_engine()

    @property
    def registry(self) -> Registry:
        return self._engine.registry if self._engine is not None else default_registry

    def _set_handler(self, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise ConfigurationError(f"Queue {self.name!r}: the handler must be callable.")
        self.fn = fn
        # A batch handler runs in a slot thread, async or not (worker/batching.py).
        self.is_async = inspect.iscoroutinefunction(fn) and self.batch is None

    def handler(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator setting this queue's handler: ``@emails.handler``."""
        self._set_handler(fn)
        self.registry.add_queue(self)
        return fn

    # -- adding jobs -------------------------------------------------------------------

    def add(self, data: Any = None, **options: Any) -> Job:
        """Add one job and return it. ``job_id`` is an idempotency key: adding an id
        that exists returns the existing job instead of a duplicate.

        Options (keyword-only): ``job_id``, ``delay`` (seconds or timedelta),
        ``run_at``, ``priority``, ``attempts``, ``backoff``, ``depends_on``,
        ``parent_failure`` ("block" | "cascade-fail" | "ignore"), ``correlation_id``,
        ``tags``, ``timeout``; ``unique_for`` or ``debounce`` with ``unique_key``
        (docs/how-to/uniqueness-and-debounce.md).
        """
        with producer_span(self.name, 1) as span:
            jobs = self._produce([(data, options)])
            record_jobs(span, jobs)
        return jobs[0]

    def add_bulk(self, items: Iterable[Any]) -> list[Job]:
        """Add many jobs with one durable round trip and one hot-plane signal. Each
        item is a payload, or ``{"data": payload, **options}``. Returns the jobs in
        order (the existing job where an id was already taken)."""
        items = [options_from(item) for item in items]
        with producer_span(self.name, len(items)):
            return self._produce(items)

    def _produce(self, items: list[tuple[Any, Any]]) -> list[Job]:
        """``_add``, inside the application's open transaction when there is one to join
        (:mod:`oqronkit.transactions`)."""
        transaction = to_join(self.engine)
        if transaction is None:
            return self._add(items)
        with joining(self.engine, transaction):
            return self._add(items)

    def _add(self, items: list[tuple[Any, Any]]) -> list[Job]:
        if self.lifecycle.on_pause != "hold" and (skipped := paused_add(self, items)) is not None:
            return skipped
        if len(items) > 1 and not any(options for _, options in items):  # first: no option, no window
            return self._add_plain([data for data, _ in items])
        if any(WINDOW_OPTIONS.intersection(options) for _, options in items):
            return add_with_windows(self, items, self._add)  # windows.py: unique_for, debounce
        if (one := add_in_one_trip(self, items)) is not None:  # a bare payload, postgres mode
            return [one]
        jobs = []
        for data, options in items:
            unknown = set(options) - _ADD_OPTIONS
            if unknown:
                raise InvalidJob(f"Unknown add option(s): {', '.join(sorted(unknown))}.")
            jobs.append(build_job(self, data, **options))
        if not jobs:
            return []
        ids = [j.id for j in jobs]
        if len(set(ids)) != len(ids):
            raise InvalidJob("add_bulk got the same job_id twice in one batch.")
        reject_cycles(jobs)
        self._resolve_dependencies(jobs)
        engine = self.engine
        inserted = engine.durable.insert_many(RecordWrite(j.namespace, j.id, j.to_value()) for j in jobs)
        fresh = [j for j in jobs if (j.namespace, j.id) in inserted]
        self._register_dependents(fresh)
        self._signal([j for j in fresh if j.status in ("waiting", "delayed")])
        self._enqueued(fresh)
        if len(fresh) == len(jobs):
            return jobs
        existing = {r.id: Job.from_value(r.value) for r in engine.durable.get_many(
            self.namespace, [j.id for j in jobs if (j.namespace, j.id) not in inserted])}
        return [existing.get(j.id, j) if (j.namespace, j.id) not in inserted else j for j in jobs]

    def _add_plain(self, payloads: list[Any]) -> list[Job]:
        """``add_bulk`` of bare payloads: fresh ids, no dependencies, one encoding pass."""
        jobs: list[Job] = []
        try:
            self.engine.durable.insert_new_json(self.namespace, plain_job_rows(self, payloads, jobs), checked=True)
        except DuplicateRecord as exc:  # fresh random ids never clash; say so loudly if they did
            raise InvalidJob(f"A new job id of {self.name!r} already existed; no job was added: {exc}") from exc
        self._signal(jobs)
        self._enqueued(jobs)
        return jobs

    def add_on_commit(self, data: Any = None, *, using: str | None = None, **options: Any) -> None:
        """Add the job once the surrounding Django transaction commits (none if it rolls back)."""
        from django.db import transaction  # only meaningful inside a Django project

        transaction.on_commit(lambda: self.add(data, **options), using=using)

    def _enqueued(self, jobs: Sequence[Job]) -> None:
        """The ``enqueued`` event, once the jobs exist for everyone (after the commit of
        an application's transaction the add joined)."""
        if jobs:
            when_committed(lambda: emit_many(self.registry, self, "enqueued", jobs, inline=True))

    def _signal(self, jobs: Sequence[Job]) -> None:
        if not jobs:
            return
        signals = [Signal(j.id, j.priority, j.run_at, j.lifo) for j in jobs]
        signal_when_committed(self.engine, lambda: self._send(signals))

    def _send(self, signals: list[Signal]) -> None:
        try:
            self.engine.hot.signal(self.name, signals, now_ms())
        except BackendUnavailable as exc:
            # The jobs are durable; the reconciler signals them once the hot plane is back.
            logger.warning(
                "hot plane unavailable while adding %d job(s) to %s; they are stored and will be "
                "signalled by the reconciler: %s", len(signals), self.name, exc,
                extra={"action": "queue.add.hot_unavailable", "queue": self.name},
            )

    def _resolve_dependencies(self, jobs: list[Job]) -> None:
        """Drop parents that completed, apply the failure policy to dead ones, refuse the
        batch if a parent is nowhere (:func:`oqronkit.queues.dependencies.resolve_dependencies`)."""
        from .dependencies import resolve_dependencies

        resolve_dependencies(self.engine.durable, jobs)

    def _register_dependents(self, jobs: Sequence[Job]) -> None:
        """Record each new child on its parents so completing a parent releases it at
        once (the leader's dependency sweep covers any race with a finishing parent)."""
        from .dependencies import add_dependent

        for job in jobs:
            for queue, parent_id in job.pending:
                add_dependent(self.engine.durable, queue, parent_id, [job.queue, job.id])


def check_queue_name(name: Any) -> str:
    """A queue name: 1-100 characters, no ':' (it ends a namespace's family), no
    surrounding spaces, no control character or lone surrogate. URL-hostile characters
    such as '/' are allowed: the board quotes them."""
    if not isinstance(name, str) or not name or ":" in name or len(name) > 100 or name != name.strip():
        raise ConfigurationError(f"Queue name {name!r} must be 1-100 characters without ':' or surrounding spaces.")
    problem = text_problem(name)
    if problem is not None:
        raise ConfigurationError(f"Queue name {name!r} cannot be used: {problem}.")
    return name


def _check_limits(name: str, *, strategy: str, concurrency: int, max_stalls: int, retries: int, prefetch: int | None,
                  throttle: tuple[int, float] | None) -> None:
    """The queue's name and how it is consumed: strategy, counts and throttle."""
    check_queue_name(name)
    if strategy not in ("fifo", "lifo", "priority"):
        raise ConfigurationError(f"Queue {name!r}: strategy must be fifo, lifo or priority, got {strategy!r}.")
    _check_count(name, "concurrency", concurrency, 1, MAX_CONCURRENCY)
    _check_count(name, "max_stalls", max_stalls, 1, MAX_ATTEMPTS)
    _check_count(name, "retries", retries, 0, MAX_ATTEMPTS - 1)
    if prefetch is not None:
        _check_count(name, "prefetch", prefetch, 0, None)
    if throttle is not None and not _valid_throttle(throttle):
        raise ConfigurationError(f"Queue {name!r}: throttle must be (max_dispatches, window_seconds): a "
                                 f"positive integer and a positive finite number, got {throttle!r}.")


class _JobDefaults(NamedTuple):
    """A queue's defaults for its jobs, in the units a job stores."""

    timeout_ms: int | None
    completed_run_ttl_ms: int | None
    lease_ms: int
    backoff: Backoff
    priority: int


def _job_defaults(name: str, *, timeout: float | timedelta | None, remove_on_complete: float | timedelta | None,
                  lease: float | timedelta, backoff: Any, priority: int, tags: Sequence[str]) -> _JobDefaults:
    """What every job of the queue inherits, checked as ``add`` checks its options."""
    try:
        timeout_ms = check_timeout(timeout)
        completed_run_ttl_ms = to_ms(remove_on_complete, what="remove_on_complete")
        lease_ms = to_ms(lease, what="lease")
        if not lease_ms:
            raise InvalidJob(f"lease must be positive, got {lease!r}.")
        declared_backoff = make_backoff(backoff)
        declared_priority = check_priority(priority)
        if not isinstance(tags, (list, tuple)):
            raise InvalidJob(f"tags must be a list of strings, got {tags!r}.")
        for tag in tags:
            check_text(tag, what="a tag")
    except InvalidJob as exc:  # the same checks as add's, reported as the declaration's error
        raise ConfigurationError(f"Queue {name!r}: {exc}") from exc
    return _JobDefaults(timeout_ms, completed_run_ttl_ms, lease_ms, declared_backoff, declared_priority)


def _check_count(queue: str, label: str, value: Any, low: int, top: int | None) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (top is not None and value > top):
        bound = f"from {low} to {top:,}" if top is not None else f">= {low}"
        raise ConfigurationError(f"Queue {queue!r}: {label} must be an integer {bound}, got {value!r}.")


def _valid_throttle(throttle: Any) -> bool:
    if not isinstance(throttle, (tuple, list)) or len(throttle) != 2:
        return False
    count, window = throttle
    return (isinstance(count, int) and not isinstance(count, bool) and count >= 1
            and isinstance(window, (int, float)) and not isinstance(window, bool) and math.isfinite(window)
            and window > 0)


_ADD_OPTIONS = frozenset({"job_id", "delay", "run_at", "priority", "attempts", "backoff", "depends_on",
                          "parent_failure", "correlation_id", "tags", "timeout"})

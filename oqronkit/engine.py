"""The engine: one configuration, its two planes, and the queues declared against it.

A process normally uses the default engine (:func:`get_engine`), configured by
:func:`configure` or, on first use, from the ``OQRON_*`` environment variables. Tests
build isolated engines with their own :class:`Registry`.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from .backends import open_durable_store
from .backends.protocols import HotPlane
from .config import OqronConfig, config_from_env
from .durable import DurablePlane
from .errors import ConfigurationError, UnknownQueue
from .hot import HotPlaneFacade
from .ids import node_id
from .lifecycle import Callback, register
from .module_logs import ModuleLogHandler, attach, detach
from .namespaces import TABLE_NAMES
from .planes import commit_together
from .queues.queue import Queue, Registry, default_registry, set_default_engine_lookup
from .trace import DEFAULT_LIMIT as DEFAULT_TRACE_LIMIT
from .trace import Trace, read_trace
from .transactions import TransactionLookup

if TYPE_CHECKING:  # the features' modules load when first used (a plain worker needs none of them)
    from .backends.db_health import DatabaseHealth
    from .caches.cache import Cache
    from .history.read import History
    from .history.rollup import RollupReport
    from .ratelimit import RateLimiter
    from .topics.topic import Topic
    from .webhooks.webhook import Webhook

logger = logging.getLogger(__name__)


def open_hot_plane(config: OqronConfig) -> HotPlane:
    """The hot plane the configured mode calls for."""
    if config.mode == "memory":
        from .backends.memory_hot import MemoryHotPlane

        return MemoryHotPlane()
    if config.mode == "sqlite":
        from .backends.sqlite_hot import SQLiteHotPlane

        return SQLiteHotPlane(config.sqlite_path)
    if config.mode == "postgres":
        from .backends.postgres import PostgresHotPlane

        assert config.database_url is not None
        return PostgresHotPlane(config.database_url, connect_timeout=config.backend_wait)
    if config.mode in ("redis", "redis-postgres"):
        from .backends.redis import RedisHotPlane

        assert config.redis_url is not None
        return RedisHotPlane(config.redis_url, check_eviction=not config.allow_redis_eviction,
                             connect_timeout=config.backend_wait)
    raise ConfigurationError(f"Mode {config.mode!r} has no hot plane in this version.")


class Engine:
    """Both planes for one configuration and scope, plus this process's identity."""

    def __init__(
        self,
        config: OqronConfig,
        *,
        registry: Registry | None = None,
        durable: DurablePlane | None = None,
        hot: HotPlaneFacade | None = None,
    ) -> None:
        self.config = config
        self.registry = registry if registry is not None else default_registry
        self.node_id = node_id()
        self._workers = itertools.count()
        _open_engines.add(self)
        self._durable = durable
        self._hot = hot
        self._lock = threading.Lock()
        self._module_logs: ModuleLogHandler | None = None
        #: The application's open transaction on this engine's database, looked up on each
        #: add (:mod:`oqronkit.transactions`); a framework integration installs it.
        self.host_transaction: TransactionLookup | None = None

    def new_worker_id(self) -> str:
        """The id of a worker process starting on this engine: the node id, suffixed for a
        second one sharing the engine (a worker recovers its own leases by its id)."""
        n = next(self._workers)
        return self.node_id if n == 0 else f"{self.node_id}-w{n}"

    @property
    def durable(self) -> DurablePlane:
        if self._durable is None:
            with self._lock:
                if self._durable is None:
                    plane = DurablePlane(
                        open_durable_store(self.config), project=self.config.project,
                        environment=self.config.environment, max_record_bytes=self.config.max_record_bytes,
                    )
                    plane.start(acknowledge_v1_layout=self.config.acknowledge_v1_layout)
                    self._durable = plane
                    if self.config.module_logs:
                        self._module_logs = attach(plane, self.config.module_logs,
                                                   retention_days=self.config.module_log_retention_days)
        return self._durable

    @property
    def hot(self) -> HotPlaneFacade:
        if self._hot is None:
            with self._lock:
                if self._hot is None:
                    plane = open_hot_plane(self.config)
                    plane.ensure_ready()
                    self._hot = HotPlaneFacade(
                        plane, project=self.config.project, environment=self.config.environment
                    )
        return self._hot

    @property
    def settles_in_one_transaction(self) -> bool:
        """Whether a worker settles completed jobs in one durable transaction that also
        releases their leases (:meth:`DurablePlane.apply_and_release`): where both planes
        commit in one database (postgres mode)."""
        return commit_together(self)

    def database_health(self) -> DatabaseHealth | None:
        """What the PostgreSQL server says of the engine's tables (the transaction holding
        the horizon, dead rows, last vacuums), warning past ``horizon_warning_s``; None
        on other durable planes."""
        read = getattr(self.durable.store, "database_health", None)
        if read is None:
            return None
        from .backends.postgres.hot import HOT_TABLES

        tables = [*TABLE_NAMES.values(), *HOT_TABLES]
        return cast("DatabaseHealth", read(tables, self.config.horizon_warning_s))

    def queue(self, name: str, **options: Any) -> Queue:
        """Declare a queue on this engine (see :func:`oqronkit.queues.queue`)."""
        return Queue(name, engine=self, **options)

    def topic(self, name: str, **options: Any) -> Topic:
        """Declare a topic on this engine (see :func:`oqronkit.topic`)."""
        from .topics.topic import Topic

        return Topic(name, engine=self, **options)

    def rate_limit(self, name: str, **options: Any) -> RateLimiter:
        """Declare a rate limiter on this engine (see :func:`oqronkit.rate_limit`)."""
        from .ratelimit import RateLimiter

        return RateLimiter(name, engine=self, **options)

    def cache(self, name: str, **options: Any) -> Cache:
        """Declare a cache on this engine (see :func:`oqronkit.cache`)."""
        from .caches.cache import Cache

        return Cache(name, engine=self, **options)

    def webhook(self, name: str, **options: Any) -> Webhook:
        """Declare a webhook on this engine (see :func:`oqronkit.webhook`)."""
        from .webhooks.webhook import Webhook

        return Webhook(name, engine=self, **options)

    def on(self, event: str, fn: Callback | None = None) -> Any:
        """Call ``fn(event)`` on ``event`` of every queue of this engine (its registry); see
        :mod:`oqronkit.lifecycle`. Usable as a decorator."""
        return register(self.registry.listeners, event, fn)

    def group(self, members: Any, **options: Any) -> str:
        """Add a group of jobs with a callback; its id (see :func:`oqronkit.group`)."""
        from .groups.ledger import create_group

        return create_group(self, members, **options)

    def get_queue(self, name: str) -> Queue:
        try:
            return self.registry.queues[name]
        except KeyError:
            known = ", ".join(sorted(self.registry.queues)) or "none"
            raise UnknownQueue(
                f"No queue named {name!r} is declared in this process (known: {known}). "
                "Declare it with oqronkit.queue(name) or import the module that does."
            ) from None

    def controller(self, name: str) -> Queue:
        """The queue ``name`` for control and inspection (pause, retry, counts, ...):
        the one declared in this process, or else a publisher-only :class:`Queue` on this
        engine, so tools such as the board can operate queues whose handlers live in
        other processes. Raises :class:`ConfigurationError` for an invalid name."""
        declared = self.registry.queues.get(name)
        if declared is not None:
            return declared
        return Queue(name, engine=self)

    def trace(self, correlation_id: str, *, limit: int = DEFAULT_TRACE_LIMIT) -> Trace:
        """The timeline of one correlation id in this engine's scope (:mod:`oqronkit.trace`)."""
        return read_trace(self.durable, correlation_id, limit=limit)

    def metrics_history(self, scope: str, key: str, range: str = "24h") -> History:
        """Runs of one queue, handler or topic group (``scope`` ``queue``, ``handler``,
        ``topic``; ``all`` with key ``*``) over ``range`` (``1h``, ``24h``, ``7d``, ``30d``,
        ``90d``, ``1y``) from the leader's rollups, with the deploy markers in it
        (:mod:`oqronkit.history`). Raises InvalidRecord (a ValueError) for a bad argument."""
        from .history.read import metrics_history

        return metrics_history(self.durable, scope, key, range)

    def rollup_history(self, *, now: int | None = None) -> RollupReport:
        """Run the metrics history's rollup pass now (the leader runs it each minute)."""
        from .history.rollup import Retention, rollup

        return rollup(self.durable, retention=Retention.from_config(self.config), now=now)

    def scoped(self, *, project: str, environment: str) -> Engine:
        """This engine seen from another (project, environment): the same planes (opened
        lazily, shared, never closed by the copy) and a registry of its own, so control
        queues built on it never mix with the queues declared in this process."""
        return ScopedEngine(self, self.config.with_scope(project=project, environment=environment))

    def close(self) -> None:
        if self._module_logs is not None:
            detach(self._module_logs)  # its last flush needs the durable plane
            self._module_logs = None
        for plane in (self._hot, self._durable):
            if plane is not None:
                plane.close()
        self._hot = self._durable = None


class ScopedEngine(Engine):
    """An :class:`Engine` view over another engine's planes, in another scope
    (:meth:`Engine.scoped`). Its planes belong to the parent: closing it closes nothing."""

    def __init__(self, parent: Engine, config: OqronConfig) -> None:
        super().__init__(config, registry=Registry())
        self.registry.listeners = parent.registry.listeners  # an action here fires the parent's callbacks
        self.host_transaction = parent.host_transaction
        self.parent = parent

    @property
    def durable(self) -> DurablePlane:
        if self._durable is None:
            self._durable = self.parent.durable.scoped(project=self.config.project,
                                                       environment=self.config.environment)
        return self._durable

    @property
    def hot(self) -> HotPlaneFacade:
        if self._hot is None:
            self._hot = self.parent.hot.scoped(project=self.config.project, environment=self.config.environment)
        return self._hot

    def close(self) -> None:
        self._hot = self._durable = None


_default: Engine | None = None
_default_lock = threading.Lock()
#: Where the default engine comes from when a framework configures it (Django's
#: integration installs one in its app's ready()): it wins over the environment.
_provider: Callable[[], Engine] | None = None


def configure(config: OqronConfig | None = None, **overrides: Any) -> Engine:
    """Set the default engine from ``config`` (or the environment) plus keyword
    overrides, closing any previous default engine. An explicit call wins over an
    installed provider (:func:`provide_default`)."""
    global _default, _provider
    from dataclasses import replace

    base = config if config is not None else config_from_env()
    final = replace(base, **overrides) if overrides else base
    with _default_lock:
        if _default is not None:
            _default.close()
        _default = Engine(final)
        _provider = None
    return _default


def provide_default(provider: Callable[[], Engine] | None) -> None:
    """Make ``provider()`` the default engine from now on (None removes it). Django's
    integration calls it before any user code runs, so a producer never falls back to
    an engine built from the environment while the project's settings say otherwise."""
    global _provider
    with _default_lock:
        _provider = provider


def get_engine() -> Engine:
    """The default engine: the installed provider's, else the configured one, else (on
    first use) one configured from ``OQRON_*``."""
    global _default
    provider = _provider
    if provider is not None:
        return provider()
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Engine(config_from_env())
                logger.info(
                    "oqronkit configured from the environment: mode %s", _default.config.mode,
                    extra={"action": "engine.autoconfigure"},
                )
    return _default


# A queue declared without an engine stands below this module, so it is told where the default one is.
set_default_engine_lookup(get_engine)

_open_engines: weakref.WeakSet[Engine] = weakref.WeakSet()


@atexit.register
def _close_engines() -> None:
    """Close every engine still open at exit: connection pools stopped by their own
    finalisers at interpreter shutdown wait 5 s per thread."""
    for engine in list(_open_engines):
        engine.close()

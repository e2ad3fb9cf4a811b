"""oqronkit: task queues, schedules and the spec's two-plane storage model, in Python.

This module is the public API and nothing else. Its names load on first use (PEP 562)
past the engine's core: a worker that declares no topic, webhook, cache or rate limit
never imports them, nor the operator CLI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Eager: importing it installs the default engine's lookup, which a queue, topic or webhook
# declared without an engine uses (queues/queue.py); every worker needs it anyway.
from . import engine as _engine  # noqa: F401

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from .backends.types import ABSENT, StoredRecord
    from .caches.cache import Cache, cache
    from .caches.entries import InvalidCacheKey, InvalidCacheValue
    from .caches.fetch import FetchTimeout
    from .config import OqronConfig, config_from_env, config_from_mapping
    from .correlation import correlate
    from .declare import on, queue, worker
    from .durable import DurablePlane, Page, RecordWrite
    from .engine import Engine, configure, get_engine
    from .errors import (
        BackendUnavailable,
        ConfigurationError,
        Discard,
        InvalidJob,
        InvalidNamespace,
        InvalidRecord,
        InvalidSchedule,
        InvalidState,
        JobNotFound,
        LegacyLayoutDetected,
        MissingDependency,
        OqronError,
        Postpone,
        RecordTooLarge,
        RetryAfter,
        UnknownQueue,
        UnknownSchedule,
    )
    from .groups.api import get_group, group, group_results
    from .groups.ledger import JobSpec, job_spec
    from .groups.records import GroupInfo, GroupNotFound, MemberResult
    from .lifecycle import EVENTS, Event
    from .namespaces import (
        JOBS_TABLE,
        RECORD_KINDS,
        RECORDS_TABLE,
        RUNS_TABLE,
        TABLE_NAMES,
        classify_namespace,
        table_for_kind,
        table_name_for_namespace,
    )
    from .queues.batch import Batch
    from .queues.gates import QueuePaused
    from .queues.jobs import Job
    from .queues.queue import Queue, Registry
    from .ratelimit import Decision, RateLimiter, rate_limit
    from .scheduler import Cron, Schedule, cron, schedule
    from .topics.subscription import Message, TopicContext
    from .topics.topic import Topic, topic
    from .trace import Trace, TraceEntry
    from .webhooks.endpoints import Endpoint
    from .webhooks.webhook import Webhook, webhook

__version__ = "0.9.0"
"""The distribution's version: the one place it is written (pyproject.toml reads it)."""

#: Where each public name lives, relative to this package; imported by ``__getattr__``.
_EXPORTS: dict[str, str] = {
    "ABSENT": "backends.types",
    "StoredRecord": "backends.types",
    "cache": "caches.cache",
    "Cache": "caches.cache",
    "FetchTimeout": "caches.fetch",
    "InvalidCacheKey": "caches.entries",
    "InvalidCacheValue": "caches.entries",
    "config_from_env": "config",
    "config_from_mapping": "config",
    "OqronConfig": "config",
    "correlate": "correlation",
    "on": "declare",
    "queue": "declare",
    "worker": "declare",
    "DurablePlane": "durable",
    "Page": "durable",
    "RecordWrite": "durable",
    "configure": "engine",
    "get_engine": "engine",
    "Engine": "engine",
    "BackendUnavailable": "errors",
    "ConfigurationError": "errors",
    "Discard": "errors",
    "InvalidJob": "errors",
    "InvalidNamespace": "errors",
    "InvalidRecord": "errors",
    "InvalidSchedule": "errors",
    "InvalidState": "errors",
    "JobNotFound": "errors",
    "LegacyLayoutDetected": "errors",
    "MissingDependency": "errors",
    "OqronError": "errors",
    "Postpone": "errors",
    "RecordTooLarge": "errors",
    "RetryAfter": "errors",
    "UnknownQueue": "errors",
    "UnknownSchedule": "errors",
    "get_group": "groups.api",
    "group": "groups.api",
    "group_results": "groups.api",
    "job_spec": "groups.ledger",
    "JobSpec": "groups.ledger",
    "GroupInfo": "groups.records",
    "GroupNotFound": "groups.records",
    "MemberResult": "groups.records",
    "EVENTS": "lifecycle",
    "Event": "lifecycle",
    "classify_namespace": "namespaces",
    "table_for_kind": "namespaces",
    "table_name_for_namespace": "namespaces",
    "JOBS_TABLE": "namespaces",
    "RECORDS_TABLE": "namespaces",
    "RECORD_KINDS": "namespaces",
    "RUNS_TABLE": "namespaces",
    "TABLE_NAMES": "namespaces",
    "Batch": "queues.batch",
    "QueuePaused": "queues.gates",
    "Job": "queues.jobs",
    "Queue": "queues.queue",
    "Registry": "queues.queue",
    "rate_limit": "ratelimit",
    "Decision": "ratelimit",
    "RateLimiter": "ratelimit",
    "cron": "scheduler",
    "schedule": "scheduler",
    "Cron": "scheduler",
    "Schedule": "scheduler",
    "Message": "topics.subscription",
    "TopicContext": "topics.subscription",
    "topic": "topics.topic",
    "Topic": "topics.topic",
    "Trace": "trace",
    "TraceEntry": "trace",
    "Endpoint": "webhooks.endpoints",
    "webhook": "webhooks.webhook",
    "Webhook": "webhooks.webhook",
}


def __getattr__(name: str) -> Any:
    """Import the module that defines ``name`` on first access and keep the value here."""
    module = _EXPORTS.get(name)
    if module is None:
        try:  # `import oqronkit; oqronkit.engine...` worked while this module imported everything
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


def open_durable(config: OqronConfig, *, start: bool = True) -> DurablePlane:
    """A :class:`DurablePlane` for ``config``'s mode and scope; ``start`` checks for the
    v1 layout and creates the schema."""
    from .backends import open_durable_store
    from .durable import DurablePlane

    plane = DurablePlane(
        open_durable_store(config),
        project=config.project,
        environment=config.environment,
        max_record_bytes=config.max_record_bytes,
    )
    if start:
        plane.start(acknowledge_v1_layout=config.acknowledge_v1_layout)
    return plane


__all__ = [
    "ABSENT",
    "EVENTS",
    "JOBS_TABLE",
    "RECORDS_TABLE",
    "RECORD_KINDS",
    "RUNS_TABLE",
    "TABLE_NAMES",
    "BackendUnavailable",
    "Batch",
    "Cache",
    "ConfigurationError",
    "Cron",
    "Decision",
    "Discard",
    "DurablePlane",
    "Endpoint",
    "Engine",
    "Event",
    "FetchTimeout",
    "GroupInfo",
    "GroupNotFound",
    "InvalidCacheKey",
    "InvalidCacheValue",
    "InvalidJob",
    "InvalidNamespace",
    "InvalidRecord",
    "InvalidSchedule",
    "InvalidState",
    "Job",
    "JobNotFound",
    "JobSpec",
    "LegacyLayoutDetected",
    "MemberResult",
    "Message",
    "MissingDependency",
    "OqronConfig",
    "OqronError",
    "Page",
    "Postpone",
    "Queue",
    "QueuePaused",
    "RateLimiter",
    "RecordTooLarge",
    "RecordWrite",
    "Registry",
    "RetryAfter",
    "Schedule",
    "StoredRecord",
    "Topic",
    "TopicContext",
    "Trace",
    "TraceEntry",
    "UnknownQueue",
    "UnknownSchedule",
    "Webhook",
    "__version__",
    "cache",
    "classify_namespace",
    "config_from_env",
    "config_from_mapping",
    "configure",
    "correlate",
    "cron",
    "get_engine",
    "get_group",
    "group",
    "group_results",
    "job_spec",
    "on",
    "open_durable",
    "queue",
    "rate_limit",
    "schedule",
    "table_for_kind",
    "table_name_for_namespace",
    "topic",
    "webhook",
    "worker",
]

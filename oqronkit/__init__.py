"""oqronkit: task queues, schedules and the spec's two-plane storage model, in Python.

This module is the public API and nothing else.
"""

from __future__ import annotations

from .backends import open_durable_store
from .backends.types import ABSENT, StoredRecord
from .caches import Cache, FetchTimeout, InvalidCacheKey, InvalidCacheValue, cache
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


def open_durable(config: OqronConfig, *, start: bool = True) -> DurablePlane:
    """A :class:`DurablePlane` for ``config``'s mode and scope; ``start`` checks for the
    v1 layout and creates the schema."""
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

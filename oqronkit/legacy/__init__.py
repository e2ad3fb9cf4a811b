"""Copy a v1 ``oqron_kv`` database into the v2 tables: a pure row mapping and a runner.

The v1 layout
=============

v1 kept everything in one table::

    oqron_kv(
        namespace  text,                                -- 'oqron:{project}:{environment}:{logical}'
        id         text,
        value      jsonb   (JSON text on SQLite),       -- the v1 toolkit named this column "data"
        created_at timestamptz (text or number on SQLite),
        PRIMARY KEY (namespace, id)
    )

Isolation was baked into the namespace string: ``oqron:my-app:production:jobs`` is the
logical namespace ``jobs`` of project ``my-app``, environment ``production``. A namespace
without that prefix belongs to the configured (default) project and environment. Project
and environment names cannot contain ``:``, so the logical part may (``ratelimit:bans``).

Values encode JavaScript dates as ``{"__type": "Date", "__val": "<ISO 8601>"}``; every
such wrapper, at any depth, becomes integer epoch milliseconds (v2 stores epoch ms).
Top-level time fields of jobs and schedules (``createdAt``, ``nextRunAt`` ...) that hold a
bare ISO string are converted as well.

The mapping (one row of v1 gives zero or more v2 writes)
========================================================

=======================  ===================================================================
v1 namespace             v2 writes
=======================  ===================================================================
``jobs``                 queue-like jobs (``type`` task / webhook / batch / workflow) become
                         v2 :class:`~oqronkit.queues.jobs.Job` records (queue, data, attempts, priority,
                         backoff, due time, error), by status:
                         waiting, delayed → ``queue_job:{queueName}`` waiting / delayed;
                         active, running, stalled, paused → ``queue_job:{queueName}`` waiting
                         (the v1 claim died with the v1 worker, so the job runs again);
                         waiting-children → ``queue_job:{queueName}`` blocked (v2 cannot re-link
                         v1 children; ``blockedBy`` lists them for an operator);
                         failed → ``queue_dlq:{queueName}`` dead, with its error, + a failed run;
                         completed, cancelled → a ``runs`` record (input = data, output =
                         returnValue, camelCase run fields as in the spec).
                         cron / schedule fires (``type`` cron or schedule) → a ``runs`` record
                         only (v2 keeps no job for a fire): completed, failed, cancelled as is;
                         running, active, stalled → failed (interrupted); waiting, delayed,
                         paused → held.
``cron_schedules``       ``cron`` definition + ``cron_durable`` pointer (nextRunAt, lastRunAt,
                         pause state, counters)
``schedule_schedules``   ``schedule`` definition + ``schedule_durable`` pointer
``queue_instances``      ``queue`` control record (``name`` = id, ``paused`` = not ``enabled``)
``worker_instances``     ``worker`` control record
``webhook_instances``    ``webhook`` control record
cache entries/tags/      nothing: hot-only in v2 (the spec keeps cache entries, rate-limit
stats, rate-limit        counters and bans on the hot plane, TTL-managed)
windows, bans, stats
anything else            the same namespace, value unchanged apart from dates (kind from
                         :func:`~oqronkit.classify_namespace`; unknown names are ``record``)
=======================  ===================================================================

Every write keeps the v1 row's id (a job's run uses the job id), so ids stay searchable.
A row is skipped, with a reason the report counts, when its value is not a JSON object,
a job has no queue name or an unknown status, a record would exceed ``max_record_bytes``,
or its project/environment is not a valid v2 name.

The runner
==========

:func:`migrate_v1` maps rows as they stream in. A dry run (the default) only counts,
per (project, environment, record kind), and opens no plane. ``apply=True`` starts one
plane per scope with ``acknowledge_v1_layout=True`` and inserts in batches with
insert-if-absent, so a second run writes nothing ("already present") and never
overwrites a row the v2 engine wrote itself. Nothing here ever changes or drops
``oqron_kv``: dropping it is the operator's decision, after checking the copy.
"""

from __future__ import annotations

from ..durable import LEGACY_TABLE
from .mapping import (
    DEAD_REASON,
    INTERRUPTED,
    LegacyRow,
    Mapped,
    V2Write,
    convert_dates,
    epoch_ms,
    map_v1_row,
    split_namespace,
)
from .runner import MigrationReport, migrate_v1

__all__ = [
    "DEAD_REASON",
    "INTERRUPTED",
    "LEGACY_TABLE",
    "LegacyRow",
    "Mapped",
    "MigrationReport",
    "V2Write",
    "convert_dates",
    "epoch_ms",
    "map_v1_row",
    "migrate_v1",
    "split_namespace",
]

"""The overview's numbers: per queue depths, dead letters, oldest waiting job, the last
hour's throughput and failure rate, run counts by status, and the live workers.

Four SQL queries, all indexed and bounded (the queue control records with each
queue's oldest waiting job as an index probe; the spec's dead-letter depth query; the
last hour of runs, one index range; the queues holding jobs, a skip scan of the
primary key), plus the hot plane's depths and heartbeats: read together and shared by
every viewer for ``OQRON_BOARD_CACHE_SECONDS`` (the page shows when they were read).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import OuterRef, Subquery, Value
from django.db.models.functions import Concat

from oqronboard.definitions.models import Record
from oqronboard.jobs.models import JobRecord
from oqronboard.jobs.queries import dlq_depths, job_queues
from oqronkit import OqronError
from oqronkit.clock import now_ms
from oqronkit.live import WorkerInfo, live_workers
from oqronkit.namespaces import JOB_PREFIX, QUEUE
from oqronkit.services.kept_depths import read_depths

from .base import conf
from .base.expressions import JsonNumber, JsonText
from .base.scope import BoardScope
from .base.shared import kept_depths_ms, shared
from .charts import Chart, stacked_bars
from .last_hour import BUCKET_MS, BUCKETS, LastHour, read_last_hour

logger = logging.getLogger(__name__)


@dataclass
class QueueRow:
    name: str
    paused: bool = False
    waiting: int | None = None
    delayed: int | None = None
    active: int | None = None
    dead: int = 0
    oldest_waiting_at: int | None = None
    completed: int = 0
    failed: int = 0
    workers: int = 0
    concurrency: int | None = None
    chart: Chart | None = None

    @property
    def failure_rate(self) -> float | None:
        finished = self.completed + self.failed
        return 100.0 * self.failed / finished if finished else None

    @property
    def unattended(self) -> bool:
        """Work is waiting and no live worker consumes this queue."""
        return self.workers == 0 and not self.paused and bool(self.waiting or self.delayed or self.active)


@dataclass
class Overview:
    now: int
    queues: list[QueueRow]
    workers: list[WorkerInfo]
    status_counts: dict[str, int]
    hot_problem: str = ""
    hidden: list[str] = field(default_factory=list)
    chart: Chart | None = None
    problems: list[str] = field(default_factory=list)
    # When the figures were read, and for how long every viewer shares them (the page says so).
    read_at: int = 0
    shared_seconds: float = 0.0

    @property
    def no_workers(self) -> bool:
        return not self.workers and not self.hot_problem


def queue_states(scope: BoardScope) -> dict[str, dict[str, Any]]:
    """Each queue's control record and the createdAt of its oldest waiting job, in one
    query: the ``queue`` control rows, each with an index probe into oqron_jobs."""
    oldest = (
        JobRecord.objects.scoped(scope.project, scope.environment)
        .filter(namespace=_job_namespace(OuterRef("id")))
        .alias(f_status=JsonText("status"), created_key=JsonNumber("createdAt"))
        .filter(f_status="waiting", created_key__isnull=False)
        .order_by(JsonNumber("createdAt"))
        .values_list(JsonNumber("createdAt"))[:1]
    )
    rows = (
        Record.objects.scoped(scope.project, scope.environment).filter(namespace=QUEUE)
        .annotate(oldest=Subquery(oldest)).order_by("id").values_list("id", "value", "oldest")[:1000]
    )
    return {name: {"control": value if isinstance(value, dict) else {}, "oldest": _int(oldest_at)}
            for name, value, oldest_at in rows}


def _job_namespace(queue: Any) -> Concat:
    return Concat(Value(JOB_PREFIX), queue)


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def internal_queues() -> set[str]:
    """Queues the overview hides (``OQRON_INTERNAL_QUEUES``; the Jobs page lists them)."""
    return conf.internal_queues()


@dataclass
class SharedReads:
    """What every viewer's overview reads, computed once per scope for a few seconds
    (:func:`shared`): the four SQL queries and the hot plane's depths and heartbeats."""

    at: int
    states: dict[str, dict[str, Any]]
    dead: dict[str, int]
    last_hour: LastHour
    holding: list[str]
    workers: list[WorkerInfo] = field(default_factory=list)
    depths: dict[str, Any] = field(default_factory=dict)
    hot_problem: str = ""


def read_shared(scope: BoardScope, first_bucket: int) -> SharedReads:
    now = now_ms()
    reads = SharedReads(at=now, states=queue_states(scope), dead=dlq_depths(scope), holding=job_queues(scope),
                        last_hour=read_last_hour(scope, first_bucket))
    names = set(reads.states) | set(reads.dead) | set(reads.holding) | reads.last_hour.queues
    try:
        reads.workers = live_workers(scope.engine.hot, now=now)
        # The leader's count when it is recent enough (kept_depths.py): a count of every hot row otherwise.
        depths = read_depths(scope.engine.hot, sorted(names), now=now, max_age_ms=kept_depths_ms())
        reads.depths, reads.at = depths.depths, min(reads.at, depths.at)
    except OqronError as exc:
        reads.workers, reads.hot_problem = [], str(exc)
    return reads


def build(scope: BoardScope, *, include_internal: bool = True, charts: bool = True) -> Overview:
    """The overview's figures; ``charts=False`` leaves out the last hour's bar charts (the
    Jobs page and the API show the counts only: drawing 12 bars a queue was wasted there)."""
    now = now_ms()
    # BUCKETS five-minute buckets, the last one still filling: (55, 60] minutes back.
    first_bucket = now // BUCKET_MS - (BUCKETS - 1)
    # Shared by every viewer's poll for a few seconds (the page says as of when).
    reads = shared(scope, f"overview:{first_bucket}", lambda: read_shared(scope, first_bucket))
    states, dead, holding, hour = reads.states, reads.dead, reads.holding, reads.last_hour
    per_queue, overall = hour.per_queue, hour.overall
    status_counts = hour.status_counts
    # A queue no worker has seen yet has no record: its jobs make it appear (unattended).
    names = sorted(set(states) | set(dead) | set(per_queue) | set(holding))
    hidden = [] if include_internal else sorted(set(names) & internal_queues())
    names = [name for name in names if name not in hidden]
    overview = Overview(now=now, queues=[], workers=reads.workers, status_counts=dict(sorted(status_counts.items())),
                        hidden=hidden, hot_problem=reads.hot_problem, read_at=reads.at,
                        shared_seconds=conf.cache_seconds())
    depths = reads.depths
    consumers: dict[str, int] = defaultdict(int)
    for worker in overview.workers:
        for name in (worker.get("queues") or {}):
            consumers[name] += 1
    labels = [_bucket_label(i) for i in range(BUCKETS)]
    for name in names:
        state = states.get(name, {})
        control = state.get("control", {})
        buckets = [(b[0], b[1]) for b in per_queue[name]] if name in per_queue else [(0, 0)] * BUCKETS
        depth = depths.get(name)
        queue_row = QueueRow(
            name=name, paused=bool(control.get("paused")), dead=dead.get(name, 0),
            oldest_waiting_at=state.get("oldest"), workers=consumers.get(name, 0),
            concurrency=control.get("concurrency") if isinstance(control.get("concurrency"), int) else None,
            completed=sum(b[0] for b in buckets), failed=sum(b[1] for b in buckets),
            chart=stacked_bars(list(buckets), labels=labels) if charts else None,
        )
        if depth is not None:
            queue_row.waiting, queue_row.delayed, queue_row.active = depth.ready, depth.delayed, depth.active
        overview.queues.append(queue_row)
    if charts:
        overview.chart = stacked_bars([(b[0], b[1]) for b in overall], labels=labels, width=480, height=80, gap=2)
    return overview


def _bucket_label(index: int) -> str:
    start = (BUCKETS - 1 - index) * BUCKET_MS // 60000
    return "the last 5 minutes" if start == 0 else f"{start + 5}-{start} minutes ago"

"""The overview's last hour: runs by status, and completed and failed runs per five-minute
bucket, overall and per queue.

The minutes the leader's rollup closed come from its minute buckets
(:func:`oqronkit.history.recent.recent_outcomes`: a few primary-key reads, each open run
counted under its status now); only the runs started since (a minute or two behind a
leader) are counted from the runs themselves, one range of the startedAt index. Without
a leader rolling, that range is the whole hour, as before the buckets.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from oqronkit.clock import now_ms
from oqronkit.history.recent import recent_outcomes

from .base.scope import BoardScope
from .runs.queries import QUEUE_MODULES, last_hour_counts, open_run_facts

BUCKET_MS = 5 * 60 * 1000
BUCKETS = 12
OUTCOME_COLUMNS = {"completed": 0, "failed": 1}


def _empty_bars() -> list[list[int]]:
    return [[0, 0] for _ in range(BUCKETS)]


@dataclass
class LastHour:
    """Runs started from ``first_bucket`` (a five-minute bucket number) on."""

    first_bucket: int
    status_counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    overall: list[list[int]] = field(default_factory=_empty_bars)
    per_queue: dict[str, list[list[int]]] = field(default_factory=lambda: defaultdict(_empty_bars))
    queues: set[str] = field(default_factory=set)  # queues with a run of any status
    #: Runs started before it were read from the rollup's minute buckets.
    rolled_until: int = 0

    def add_all(self, bucket: int, status: str, count: int) -> None:
        """``count`` runs of any kind started in ``bucket`` with ``status``."""
        self.status_counts[status or "unknown"] += count
        column = OUTCOME_COLUMNS.get(status)
        if column is not None and 0 <= bucket - self.first_bucket < BUCKETS:
            self.overall[bucket - self.first_bucket][column] += count

    def add_queue(self, queue: str, bucket: int, status: str, count: int) -> None:
        """``count`` of those runs came from ``queue``'s jobs."""
        self.queues.add(queue)
        column = OUTCOME_COLUMNS.get(status)
        if column is not None and 0 <= bucket - self.first_bucket < BUCKETS:
            self.per_queue[queue][bucket - self.first_bucket][column] += count


def read_last_hour(scope: BoardScope, first_bucket: int) -> LastHour:
    since = first_bucket * BUCKET_MS
    hour = LastHour(first_bucket)
    recent = recent_outcomes(scope.engine.durable, since, now_ms(), read_open=False)
    # The runs open when their minute was rolled, a few fields each (not whole runs through the engine).
    rolled = {id: status for id, (_, status) in recent.open.items()}
    recent.settle(open_run_facts(scope, rolled, since=since, until=recent.until))
    hour.rolled_until = recent.until
    for (kind, key), minutes in recent.counts.items():
        for minute, outcomes in minutes.items():
            for status, count in outcomes.items():
                if kind == "all":
                    hour.add_all(minute // BUCKET_MS, status, count)
                elif kind == "queue":
                    hour.add_queue(key, minute // BUCKET_MS, status, count)
    for row in last_hour_counts(scope, since=recent.until, bucket_ms=BUCKET_MS):
        hour.add_all(row["bucket"], row["status"], row["count"])
        if row["module"] in QUEUE_MODULES and row["name"]:
            hour.add_queue(row["name"], row["bucket"], row["status"], row["count"])
    return hour

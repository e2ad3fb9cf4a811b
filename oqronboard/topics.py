"""The topics page's numbers: per topic its partitions, retained messages, oldest and
newest publishedAt and last hour's publishes; per consumer group its lag, deliveries in
flight, dead letters and pause flag.

Three SQL queries, all indexed and bounded, whatever the size of the logs:

1. the topic records of oqron_records (definitions, state, offset counters, groups),
   one primary-key range read, with each partition's oldest and newest retained
   message as index probes into oqron_runs (``oqron_runs_log_offset_idx``): a
   partition retains ``next - oldest offset`` messages, so nothing is counted;
2. per topic definition, each partition's first offset of the last hour (the first
   ``WINDOW_ENTRIES`` entries of the publishedAt index from the hour's start): the hour's
   messages are then each partition's next offset minus it, nothing counted row by row
   (a partition absent from those entries but with a newer message makes it "at least";
   offsets and publishedAt may disagree by the milliseconds of a publish at the hour's
   edge). A query of its own: in the
   first, Postgres would cost that probe for every record, and compile the statement
   (JIT) for more time than it runs;
3. each group's delivery queue: its jobs (in flight: at most the dispatch window) and
   dead letters, a primary-key range per namespace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import OuterRef

from oqronboard.definitions.topics import TopicRecords, definition_annotations, group_lag, topic_records
from oqronboard.jobs.queries import queue_sizes
from oqronboard.row_html import int_text
from oqronboard.runs.topics import parse_oldest, parse_window_starts, partition_edges, window_starts
from oqronkit.clock import now_ms
from oqronkit.topics.subscription import delivery_queue_name

from .base.filters import HOUR_MS
from .base.scope import BoardScope


@dataclass
class GroupRow:
    """One consumer group of a topic as the board shows it."""

    topic: str
    name: str
    paused: bool
    lag: int
    lag_partitions: dict[int, int]
    cursor: dict[str, Any]
    start_from: str
    updated_at: int | None
    in_flight: int = 0
    dead: int = 0

    @property
    def queue(self) -> str:
        """The group's delivery queue (``<topic>@<group>``)."""
        return delivery_queue_name(self.topic, self.name)

    @property
    def lag_title(self) -> str:
        """The lag of each partition, as the lag cell's title says it."""
        return ", ".join(f"partition {p}: {int_text(n)}" for p, n in self.lag_partitions.items())


@dataclass
class PartitionRow:
    partition: int
    next: int
    oldest: int | None
    oldest_published: int | None
    newest_published: int | None

    @property
    def retained(self) -> int:
        return max(self.next - self.oldest, 0) if self.oldest is not None else 0

    @property
    def newest(self) -> int | None:
        return self.next - 1 if self.next > 0 else None


@dataclass
class TopicRow:
    name: str
    partitions: int
    defined: bool
    definition: dict[str, Any]
    paused: bool
    partition_rows: list[PartitionRow]
    groups: list[GroupRow] = field(default_factory=list)
    last_hour: int = 0
    # A partition published in the hour but its first message of it was not found: "at least".
    last_hour_partial: bool = False
    now: int = 0

    @property
    def retained(self) -> int:
        return sum(p.retained for p in self.partition_rows)

    @property
    def published(self) -> int:
        """Messages ever published (the sum of the partitions' next offsets)."""
        return sum(p.next for p in self.partition_rows)

    @property
    def oldest_published(self) -> int | None:
        return min((p.oldest_published for p in self.partition_rows if p.oldest_published is not None), default=None)

    @property
    def newest_published(self) -> int | None:
        return max((p.newest_published for p in self.partition_rows if p.newest_published is not None), default=None)

    @property
    def per_minute(self) -> float:
        """Messages a minute over the last hour."""
        return self.last_hour / 60

    @property
    def lag(self) -> int:
        return sum(g.lag for g in self.groups)

    @property
    def dead(self) -> int:
        return sum(g.dead for g in self.groups)


@dataclass
class TopicsOverview:
    now: int
    topics: list[TopicRow]
    capped: bool = False

    def get(self, name: str) -> TopicRow | None:
        return next((t for t in self.topics if t.name == name), None)


def build(scope: BoardScope, *, topic: str | None = None) -> TopicsOverview:
    """Every topic of the scope (or one), in three queries."""
    now = now_ms()
    edges = partition_edges(scope, OuterRef("c_topic"), OuterRef("c_partition"))
    records, capped = topic_records(scope, topic=topic, annotate=edges)
    since = now - HOUR_MS
    latest = definition_annotations(scope, {"starts": window_starts(scope, OuterRef("id"), since)},
                                    topic=topic)
    rows = [_topic_row(found, now, since, latest.get(found.name, {}).get("starts")) for found in records.values()]
    sizes = queue_sizes(scope, [g.queue for t in rows for g in t.groups])
    for row in rows:
        for group in row.groups:
            group.in_flight, group.dead = sizes.get(group.queue, (0, 0))
    return TopicsOverview(now=now, topics=rows, capped=capped)


def _topic_row(found: TopicRecords, now: int, since: int, starts_text: Any) -> TopicRow:
    nexts = found.nexts()
    partitions = [
        PartitionRow(partition=p, next=nexts[p], oldest=_int(oldest), oldest_published=_int(published),
                     newest_published=_int(edge.get("newest_published")))
        for p in range(found.partitions) for edge in [found.counters.get(p, {})]
        for oldest, published in [parse_oldest(edge.get("oldest"))]
    ]
    last_hour, partial = _since(partitions, since, parse_window_starts(starts_text))
    row = TopicRow(name=found.name, partitions=found.partitions, defined=found.definition is not None,
                   definition=found.definition or {}, paused=bool((found.state or {}).get("paused")),
                   partition_rows=partitions, last_hour=last_hour, last_hour_partial=partial, now=now)
    for name, value in sorted(found.groups.items()):
        lag = group_lag(value, nexts)
        cursor = value.get("cursor")
        row.groups.append(GroupRow(
            topic=found.name, name=name, paused=bool(value.get("paused")), lag=sum(lag.values()),
            lag_partitions=lag, cursor=cursor if isinstance(cursor, dict) else {},
            start_from=str(value.get("startFrom", "")), updated_at=_int(value.get("updatedAt"))))
    return row


def _since(partitions: list[PartitionRow], since: int, starts: dict[int, int]) -> tuple[int, bool]:
    """Messages published since ``since``: each partition's next offset minus its first
    offset since then; a partition whose newest message is that recent but whose first
    was not among the entries read counts its newest alone (the total is then "at least")."""
    total, partial = 0, False
    for p in partitions:
        if p.partition in starts:
            total += max(p.next - starts[p.partition], 0)
        elif p.newest_published is not None and p.newest_published >= since:
            total, partial = total + 1, True
    return total, partial


def _int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return None

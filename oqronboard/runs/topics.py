"""Retained pub/sub messages (``topic_msg:<topic>``, kind ``message``) and the runs of
their deliveries, as the topic pages read them from oqron_runs.

- a topic's log, newest first: the spec's fifth dashboard query, ordered by
  ``(value->>'publishedAt')::numeric DESC`` (``oqron_runs_message_published_idx`` on
  Postgres), keyset paged on ``(publishedAt, id)``;
- a partition's oldest and newest retained message: probes of
  ``oqron_runs_log_offset_idx`` (partition, offset), the index the engine reads the
  log by, so the retained count is ``next - oldest offset`` with no count at all;
- where each partition stood at an instant, per topic: the first entries of the
  publishedAt index from it, at most ``WINDOW_ENTRIES`` a topic;
- a message's deliveries: the runs of its jobs (a delivery's job id is the message id),
  on the jobId index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Subquery, TextField, Value
from django.db.models.functions import Concat, Left

from oqronboard.base.cursors import PAGE_SIZE, encode_cursor
from oqronboard.base.expressions import JsonCast, JsonText, KindIs, Published, RowBefore, RowKey, RunStarted
from oqronboard.base.scope import BoardScope
from oqronkit.namespaces import TOPIC_MSG_PREFIX, topic_msg_namespace

from .models import RunRecord, RunRecordQuerySet
from .queries import list_fields, runs_of

PREVIEW_CHARS = 160
MAX_DELIVERY_RUNS = 100
# Messages read from the start of the last hour per topic: each partition's first one of
# the hour is among them unless the partition publishes far less than the others (it
# then counts "at least"; tests/board/test_topics_pages.py).
WINDOW_ENTRIES = 64


def messages_of(scope: BoardScope) -> RunRecordQuerySet:
    return runs_of(scope).filter(KindIs("message"))


@dataclass(frozen=True)
class MessageFilters:
    """Validated filters of a topic's log (see the shell's topic forms)."""

    key: str = ""
    correlation: str = ""
    since: int | None = None
    before: int | None = None
    cursor: tuple[int | float, str] | None = None


def message_fields() -> dict[str, Any]:
    """What a log row shows: never the whole payload, a bounded preview of it."""
    return {
        "published": JsonText("publishedAt"), "partition": JsonText("partition"), "offset": JsonText("offset"),
        "key": JsonText("key"), "correlation": JsonText("correlationId"),
        "payload_preview": Left(JsonText("payload"), PREVIEW_CHARS + 1),
        "headers_preview": Left(JsonText("headers"), PREVIEW_CHARS + 1),
    }


def message_page(scope: BoardScope, topic: str, filters: MessageFilters, *, limit: int = PAGE_SIZE
                 ) -> tuple[list[dict[str, Any]], str | None]:
    """One page of ``topic``'s retained log, newest first; the next page's cursor."""
    qs = messages_of(scope).filter(namespace=topic_msg_namespace(topic)).alias(published=Published())
    if filters.key:
        qs = qs.alias(f_key=JsonText("key")).filter(f_key=filters.key)
    if filters.correlation:
        qs = qs.alias(f_correlation=JsonText("correlationId")).filter(f_correlation=filters.correlation)
    if filters.since is not None:
        qs = qs.filter(published__gte=filters.since)
    if filters.before is not None:
        qs = qs.filter(published__lt=filters.before)
    if filters.cursor is not None:
        qs = qs.filter(published__lte=filters.cursor[0]).filter(RowBefore(Published(), RowKey(), *filters.cursor))
    ordered = qs.order_by(Published().desc(), RowKey().desc())
    rows: list[dict[str, Any]] = list(ordered.values("id", **message_fields())[: limit + 1])
    for row in rows:
        for key in ("published", "partition", "offset"):
            row[key] = _number(row[key])
        for key in ("payload_preview", "headers_preview"):
            text = row[key] or ""
            row[key] = text[:PREVIEW_CHARS] + "…" if len(text) > PREVIEW_CHARS else text
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, encode_cursor(rows[-1]["published"] or 0, rows[-1]["id"])


def get_message(scope: BoardScope, topic: str, message_id: str) -> RunRecord | None:
    """A retained message by id: a primary-key read."""
    return messages_of(scope).filter(namespace=topic_msg_namespace(topic), id=message_id).only("id", "value").first()


def partition_edges(scope: BoardScope, topic: Any, partition: Any) -> dict[str, Subquery]:
    """For a query whose rows name a topic and a partition (outer references):
    ``oldest``, the partition's oldest retained message as ``"<offset>,<publishedAt>"``
    (:func:`parse_oldest`), and the newest retained message's publishedAt; two index
    probes, no count."""
    messages = (messages_of(scope).filter(namespace=Concat(Value(TOPIC_MSG_PREFIX), topic))
                .alias(m_partition=JsonCast("partition", "int")).filter(m_partition=partition))
    oldest = messages.order_by(JsonCast("offset", "bigint").asc())
    newest = messages.order_by(JsonCast("offset", "bigint").desc())
    return {
        "oldest": Subquery(oldest.values(e=Concat(JsonText("offset"), Value(","), JsonText("publishedAt"),
                                                     output_field=TextField()))[:1]),
        "newest_published": Subquery(newest.values(p=JsonText("publishedAt"))[:1]),
    }


def parse_oldest(text: Any) -> tuple[Any, Any]:
    """:func:`partition_edges`' ``oldest`` as (offset, publishedAt) texts (None when absent)."""
    offset, _, published = str(text).partition(",") if text else ("", "", "")
    return offset or None, published or None


class _WindowStarts(Subquery):
    """:func:`window_starts`' subquery, its string aggregate spelled per database."""

    template = ("(SELECT string_agg(part || ':' || off, ',') FROM (SELECT part, min(off) AS off "
                "FROM (%(subquery)s) AS w GROUP BY part) AS g)")

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template=self.template.replace("string_agg", "group_concat"), **extra)


def window_starts(scope: BoardScope, topic: Any, since: int) -> Subquery:
    """For a query whose rows name a topic (an outer reference): ``"<partition>:<offset>,..."``,
    each partition's lowest offset among the topic's first ``WINDOW_ENTRIES`` messages published
    at or after ``since`` (a walk of the publishedAt index from ``since``, at most
    ``WINDOW_ENTRIES`` rows a topic). A partition's messages since then are its next offset
    minus that one: counted from the counters, not row by row."""
    first = (messages_of(scope).filter(namespace=Concat(Value(TOPIC_MSG_PREFIX), topic))
             .alias(published=Published()).filter(published__gte=since)
             .order_by(Published().asc(), JsonCast("offset", "bigint").asc())  # a batch shares its instant
             .values(part=JsonCast("partition", "int"), off=JsonCast("offset", "bigint"))[:WINDOW_ENTRIES])
    return _WindowStarts(first, output_field=TextField())


def parse_window_starts(text: Any) -> dict[int, int]:
    """:func:`window_starts`' text as ``{partition: offset}`` (empty when absent)."""
    starts = {}
    for pair in str(text or "").split(","):
        partition, _, offset = pair.partition(":")
        try:
            starts[int(partition)] = int(float(offset))
        except ValueError:
            continue
    return starts


def delivery_runs(scope: BoardScope, topic: str, message_id: str) -> list[dict[str, Any]]:
    """The runs delivering ``message_id`` of ``topic`` to any group, newest first: every
    group's delivery job has the message's id, so these are runs of job ``message_id``
    (the jobId index) that name this topic and message."""
    qs = (runs_of(scope).alias(f_jobId=JsonText("jobId"), f_topic=JsonText("topic"), f_message=JsonText("messageId"))
          .filter(f_jobId=message_id, f_topic=topic, f_message=message_id))
    rows: list[dict[str, Any]] = list(
        qs.order_by(RunStarted().desc(), RowKey().desc())
        .values("id", group=JsonText("group"), **list_fields())[:MAX_DELIVERY_RUNS])
    for row in rows:
        for key in ("started", "duration", "attempts"):
            row[key] = _number(row[key])
    return rows


def _number(value: Any) -> int | None:
    try:
        return int(float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None

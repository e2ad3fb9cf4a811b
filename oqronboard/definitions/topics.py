"""The pub/sub records of oqron_records: topic definitions (``topic``), each topic's
state and its partitions' offset counters (``topic_state``: ``<topic>`` and
``<topic>/offsets/<partition>``), and consumer groups (``topic_groups:<topic>``).

One primary-key range read gathers them all (or one topic's); ``annotate`` adds
per-row expressions to that read (the topics page's retained-log edges, computed for
the counter rows as index probes into oqron_runs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q

from oqronboard.base.expressions import JsonInteger, JsonText
from oqronboard.base.scope import BoardScope
from oqronboard.base.values import json_int
from oqronkit.namespaces import TOPIC, TOPIC_GROUPS_PREFIX, TOPIC_STATE, topic_groups_namespace, topic_of_groups

from .queries import records_of

MAX_TOPIC_RECORDS = 5000
# Every topic_groups:<topic> namespace sorts from the prefix up to this (':' + 1 is ';').
_GROUPS_END = TOPIC_GROUPS_PREFIX[:-1] + ";"
OFFSETS = "/offsets/"


@dataclass
class TopicRecords:
    """What oqron_records holds about one topic."""

    name: str
    definition: dict[str, Any] | None = None
    state: dict[str, Any] | None = None
    # partition -> the counter row's value and its annotations (the next free offset in "next")
    counters: dict[int, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def partitions(self) -> int:
        """The declared partitions (or, for a topic whose definition is missing, what
        its counters and group cursors show)."""
        declared = (self.definition or {}).get("partitions")
        if isinstance(declared, int) and not isinstance(declared, bool) and 1 <= declared <= 256:
            return declared
        seen = [p + 1 for p in self.counters]
        for group in self.groups.values():
            seen += [int(p) + 1 for p in _cursor(group) if p.isdigit()]
        return max([1, *seen])

    def nexts(self) -> list[int]:
        """Each partition's next free offset (0 before its first message)."""
        return [json_int(self.counters.get(p, {}).get("next")) or 0 for p in range(self.partitions)]


def outer_references() -> dict[str, Any]:
    """What ``annotate`` may refer to (``OuterRef``): a counter row's topic and
    partition (``c_topic``, ``c_partition``); None on every other row, so a probe made
    for them finds nothing."""
    return {"c_topic": JsonText("topic"), "c_partition": JsonInteger("partition")}


def topic_records(scope: BoardScope, *, topic: str | None = None, annotate: dict[str, Any] | None = None,
                  limit: int = MAX_TOPIC_RECORDS) -> tuple[dict[str, TopicRecords], bool]:
    """Every topic's records by topic name (or one topic's), in one primary-key range
    read; and whether the read was capped."""
    if topic is None:
        where = Q(namespace__in=[TOPIC, TOPIC_STATE]) | Q(namespace__gt=TOPIC_GROUPS_PREFIX, namespace__lt=_GROUPS_END)
    else:
        where = (Q(namespace=TOPIC, id=topic) | Q(namespace=TOPIC_STATE, id=topic)
                 | Q(namespace=TOPIC_STATE, id__gt=topic + OFFSETS, id__lt=topic + "/offsets0")
                 | Q(namespace=topic_groups_namespace(topic)))
    qs = records_of(scope).filter(where).annotate(**outer_references(), **(annotate or {}))
    rows = list(qs.order_by("namespace", "id").values("namespace", "id", "value", *(annotate or {}))[: limit + 1])
    topics: dict[str, TopicRecords] = {}
    for row in rows[:limit]:
        _file(topics, row)
    return dict(sorted(topics.items())), len(rows) > limit


def definition_annotations(scope: BoardScope, annotate: dict[str, Any], *, topic: str | None = None,
                           limit: int = MAX_TOPIC_RECORDS) -> dict[str, dict[str, Any]]:
    """``annotate``'s values (``OuterRef("id")`` is the topic's name) on every topic
    definition (or one): a primary-key range read of the ``topic`` namespace. Apart from
    :func:`topic_records`, so a costly probe runs once a topic, not once a record."""
    qs = records_of(scope).filter(namespace=TOPIC, **({"id": topic} if topic is not None else {}))
    rows = qs.annotate(**annotate).order_by("id").values("id", *annotate)[:limit]
    return {row.pop("id"): row for row in rows}


def _file(topics: dict[str, TopicRecords], row: dict[str, Any]) -> None:
    namespace, id, value = row["namespace"], row["id"], row["value"]
    if not isinstance(value, dict):
        return
    extra = {k: v for k, v in row.items() if k not in ("namespace", "id", "value")}
    if namespace == TOPIC:
        _topic(topics, id).definition = value
    elif namespace == TOPIC_STATE and OFFSETS in id:
        name, _, partition = id.rpartition(OFFSETS)
        if partition.isdigit():
            _topic(topics, name).counters[int(partition)] = {**value, **extra}
    elif namespace == TOPIC_STATE:
        _topic(topics, id).state = value
    else:
        name = topic_of_groups(namespace)
        if name:
            _topic(topics, name).groups[id] = value


def _topic(topics: dict[str, TopicRecords], name: str) -> TopicRecords:
    found = topics.get(name)
    if found is None:
        found = topics[name] = TopicRecords(name)
    return found


def _cursor(group: dict[str, Any]) -> dict[str, Any]:
    cursor = group.get("cursor")
    return cursor if isinstance(cursor, dict) else {}



def group_lag(group: dict[str, Any], nexts: list[int]) -> dict[int, int]:
    """Messages published but not yet handed to ``group``, per partition: the engine's
    rule (``oqronkit.topics.groups.lag``) over counters already read."""
    cursor, lag = _cursor(group), {}
    for partition, next_offset in enumerate(nexts):
        handed = json_int(cursor.get(str(partition)))
        lag[partition] = max(next_offset - 1 - (-1 if handed is None else handed), 0)
    return lag


def group_cursor(group: dict[str, Any], partition: int) -> int:
    """The offset of the last message of ``partition`` handed to ``group`` (-1: none)."""
    handed = json_int(_cursor(group).get(str(partition)))
    return -1 if handed is None else handed

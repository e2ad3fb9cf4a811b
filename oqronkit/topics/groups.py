"""Consumer groups: one record per group in ``topic_groups:<topic>`` holding a cursor per
partition (the offset of the last message handed to the group's delivery queue), the
pause flag, the start position it was created with, and a version that makes every
change a compare-and-set (two dispatchers, or a dispatcher and an operator's seek,
never both win)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NotRequired, TypedDict

from ..clock import now_ms
from ..durable import ABSENT, DurablePlane
from ..errors import BackendUnavailable, InvalidState
from ..namespaces import topic_groups_namespace
from . import log

#: A start position: "latest", "earliest", an offset, or a time (a datetime or epoch ms).
Position = str | int | datetime
CAS_ATTEMPTS = 50
SCAN_PAGE = 1000


class GroupValue(TypedDict):
    topic: str
    group: str
    cursor: dict[str, int]  # partition (as text: JSON keys) -> last offset handed over
    paused: bool
    startFrom: str
    version: int
    createdAt: int
    updatedAt: int
    pending: NotRequired[PendingRange | None]  # a range a dispatcher is handing over now


class PendingRange(TypedDict):
    owner: str  # the dispatching worker's id
    cursor: dict[str, int]  # the cursor once the range is handed over
    at: int  # epoch ms it was claimed


def load(durable: DurablePlane, topic: str, group: str) -> GroupValue | None:
    record = durable.get(topic_groups_namespace(topic), group)
    return None if record is None else _group(record.value)


def ensure(durable: DurablePlane, topic: str, group: str, partitions: int, start_from: Position) -> GroupValue:
    """The group's record, created at ``start_from`` the first time (racing creators:
    one wins, the others read its record)."""
    found = load(durable, topic, group)
    if found is not None:
        return _widened(found, partitions)
    now = now_ms()
    value: GroupValue = {
        "topic": topic, "group": group, "cursor": resolve(durable, topic, partitions, start_from), "paused": False,
        "startFrom": describe(start_from), "version": 0, "createdAt": now, "updatedAt": now,
    }
    if durable.compare_and_set(topic_groups_namespace(topic), group, expect=ABSENT, value=value):
        return value
    found = load(durable, topic, group)
    if found is None:
        raise BackendUnavailable(f"the consumer group {topic}/{group} vanished while it was created")
    return _widened(found, partitions)


def claim_range(durable: DurablePlane, current: GroupValue, cursor: dict[str, int], owner: str) -> GroupValue | None:
    """Note that ``owner`` is handing over the messages up to ``cursor``; the group as
    written, or None when it changed since ``current`` was read."""
    claimed: GroupValue = {**current, "pending": {"owner": owner, "cursor": cursor, "at": now_ms()}}
    return _swapped(durable, current, claimed)


def advance(durable: DurablePlane, current: GroupValue, cursor: dict[str, int]) -> bool:
    """Move the cursor (and drop the claimed range) if nobody changed the group since
    ``current`` was read."""
    return _swapped(durable, current, {**current, "cursor": cursor, "pending": None}) is not None


def update(durable: DurablePlane, topic: str, group: str, partitions: int, **changes: Any) -> GroupValue:
    """Change fields of an existing group (``cursor``, ``paused``), retrying lost races."""
    for _ in range(CAS_ATTEMPTS):
        current = load(durable, topic, group)
        if current is None:
            raise InvalidState(f"{topic} has no consumer group {group!r}: subscribe it first.")
        changed: GroupValue = {**_widened(current, partitions), **changes}  # type: ignore[typeddict-item]
        if _swap(durable, current, changed):
            return changed
    raise BackendUnavailable(f"the consumer group {topic}/{group} kept changing under {CAS_ATTEMPTS} updates")


def resolve(durable: DurablePlane, topic: str, partitions: int, position: Position) -> dict[str, int]:
    """The cursor per partition that starts a group at ``position``."""
    if position == "latest":
        return {str(p): n - 1 for p, n in enumerate(log.next_offsets(durable, topic, partitions))}
    if position == "earliest":
        return {str(p): -1 for p in range(partitions)}
    if isinstance(position, datetime):
        return {str(p): _before_time(durable, topic, p, int(position.timestamp() * 1000)) for p in range(partitions)}
    if isinstance(position, int) and not isinstance(position, bool) and position >= 0:
        return {str(p): position - 1 for p in range(partitions)}
    raise InvalidState(f"a start position is 'latest', 'earliest', an offset (>= 0) or a datetime, got {position!r}.")


def describe(position: Position) -> str:
    return position.isoformat() if isinstance(position, datetime) else str(position)


def lag(durable: DurablePlane, topic: str, group: GroupValue, partitions: int) -> dict[str, int]:
    """Messages published but not yet handed to the group, per partition."""
    nexts = log.next_offsets(durable, topic, partitions)
    return {str(p): max(nexts[p] - 1 - group["cursor"].get(str(p), -1), 0) for p in range(partitions)}


def _before_time(durable: DurablePlane, topic: str, partition: int, at_ms: int) -> int:
    """The offset just before the partition's first message published at or after
    ``at_ms`` (page by page from the oldest retained: never the whole log at once)."""
    after = -1
    while True:
        page = log.read(durable, topic, partition, after=after, limit=SCAN_PAGE)
        for record in page:
            if record.value["publishedAt"] >= at_ms:
                return int(record.value["offset"]) - 1
        if len(page) < SCAN_PAGE:
            return int(page[-1].value["offset"]) if page else after
        after = int(page[-1].value["offset"])


def _swap(durable: DurablePlane, current: GroupValue, changed: GroupValue) -> bool:
    return _swapped(durable, current, changed) is not None


def _swapped(durable: DurablePlane, current: GroupValue, changed: GroupValue) -> GroupValue | None:
    changed = {**changed, "version": current["version"] + 1, "updatedAt": now_ms()}
    stored = durable.compare_and_set(topic_groups_namespace(current["topic"]), current["group"],
                                     expect={"version": current["version"]}, value=changed)
    return changed if stored else None


def _widened(group: GroupValue, partitions: int) -> GroupValue:
    """A group read back, with a cursor for partitions added since it was created
    (they start from their first message)."""
    cursor = {str(p): group["cursor"].get(str(p), -1) for p in range(partitions)}
    return {**group, "cursor": {**group["cursor"], **cursor}}


def _group(value: dict[str, Any]) -> GroupValue:
    return value  # type: ignore[return-value]  # written by this module only

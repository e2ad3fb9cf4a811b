"""Plain value types exchanged between the durable facade and its backends."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple

from ..namespaces import RecordKind, TableKey


@dataclass(frozen=True, slots=True)
class Scope:
    """One (project, environment): every row and every query belongs to exactly one."""

    project: str
    environment: str


class EncodedRow(NamedTuple):
    """A record ready to store: its JSON text is already size-checked and its kind
    and table are already stamped from the namespace. (A named tuple for the reason
    RecordWrite is one: one is made per record written.)"""

    namespace: str
    id: str
    kind: RecordKind
    table: TableKey
    value_json: str
    inserted_at: int
    expires_at: int | None
    new: bool = False  # RecordWrite.new: believed absent, still overwritten if present


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A row read back from a durable table."""

    namespace: str
    id: str
    record_kind: str
    value: dict[str, Any]
    inserted_at: int
    expires_at: int | None


class _Absent:
    """Sentinel for compare-and-set: "the record must not exist"."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
"""The compare-and-set sentinel: pass it as the expected value when the record must not exist yet."""

Order = Literal["inserted", "started"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListQuery:
    """A filtered, keyset-paginated listing of one namespace (or one kind).

    ``order="started"`` sorts by the run field ``startedAt`` (rows without it are not
    listed); ``order="inserted"`` by ``inserted_at``. Ties break on ``id`` in the same
    direction. ``after`` is the (sort key, id) of the last row of the previous page.
    """

    table: TableKey
    namespace: str | None = None
    kind: str | None = None
    status: str | None = None
    name: str | None = None
    module: str | None = None
    # A top-level correlationId: the trace of one correlation id (oqronkit.trace).
    correlation: str | None = None
    started_from: int | None = None
    started_to: int | None = None
    order: Order = "inserted"
    descending: bool = False
    limit: int = 50
    after: tuple[int | float, str] | None = None


def sort_key(record: StoredRecord, order: Order) -> int | float:
    """The value a listing sorts ``record`` by (used to build the next cursor)."""
    if order == "started":
        started: int | float = record.value["startedAt"]
        return started
    return record.inserted_at


@dataclass(frozen=True, slots=True, kw_only=True)
class LogAppend:
    """Records to append to one partition of a log (a topic's messages), each given the
    next offset of the partition's counter record, atomically: offsets are never
    reused, and a record with a higher offset never becomes visible before one with a
    lower offset of the same partition (appends to a partition are serialised).

    ``ids`` already in the log (only ``maybe_present`` ones are looked for) are not
    appended again (their stored offsets are returned); ``build(new_ids,
    first_offset)`` makes the rows of the others, the i-th with offset
    ``first_offset + i``; ``counter(next_offset)`` makes the counter record's row,
    which keeps the next free offset as ``value["next"]``."""

    table: TableKey
    namespace: str
    partition: int
    ids: Sequence[str]
    #: The ids that may already be in the log (derived from idempotency keys); the others
    #: are fresh and not looked up. None: every id may be.
    maybe_present: Sequence[str] | None
    counter_table: TableKey
    counter_namespace: str
    counter_id: str
    build: Callable[[list[str], int], Iterable[EncodedRow]]  # may be lazy: take each row once
    counter: Callable[[int], EncodedRow]
    #: A broadcast channel of the hot plane to notify when the append commits, in its
    #: transaction (None: no notification). Only set where the hot plane broadcasts
    #: within this store's database (the same transaction domain); other stores ignore it.
    notify: str | None = None

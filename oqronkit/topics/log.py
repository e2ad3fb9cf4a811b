"""A topic's retained log in the durable plane: append a partition's messages, each
with the partition's next offset, and read a partition in offset order.

Messages are records of ``topic_msg:<topic>`` (kind ``message``, table ``oqron_runs``)
with the spec's camelCase keys. Each partition's next free offset is the record
``<topic>/offsets/<partition>`` of ``topic_state``, written only by appends (the
store's ``append_log`` serialises the appends of a partition, so offsets are never
reused and commit in order).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple, NotRequired, TypedDict

from ..backends.types import EncodedRow, LogAppend, StoredRecord
from ..clock import now_ms
from ..codec import check_size, dumps_checked, json_fragment, utf8_size
from ..durable import DurablePlane, RecordWrite
from ..namespaces import TOPIC_STATE, classify_namespace, table_for_kind, topic_msg_namespace


class MessageValue(TypedDict):
    """A retained message as stored (the spec's keys)."""

    id: str
    topic: str
    key: str | None
    partition: int
    offset: int
    publishedAt: int
    payload: Any
    headers: dict[str, str]
    correlationId: str | None
    idempotencyKey: str | None
    runAt: NotRequired[int | None]  # a delayed message: delivered from this time (epoch ms)
    causedBy: NotRequired[str]  # the run whose handler published it (oqronkit.correlation)


class Draft(NamedTuple):
    """A message about to be appended: everything but its offset. Its payload passed
    :func:`~oqronkit.codec.dumps_compact` (JSON only), its texts were checked. (A named
    tuple: a frozen dataclass's ``__init__`` cost 1.5 us of a message's ~6.)"""

    id: str
    key: str | None
    payload: Any
    headers: dict[str, str]
    correlation_id: str | None
    idempotency_key: str | None
    published_at: int
    run_at: int | None = None
    #: The payload's compact JSON, set by the publisher once it checked it and every
    #: other text of the draft: the record is then encoded around it, not checked again.
    payload_json: str | None = None
    #: The run whose handler published it (oqronkit.correlation): the trace's nesting.
    caused_by: str | None = None


def counter_id(topic: str, partition: int) -> str:
    return f"{topic}/offsets/{partition}"


def message_value(topic: str, partition: int, offset: int, draft: Draft) -> MessageValue:
    value: MessageValue = {
        "id": draft.id, "topic": topic, "key": draft.key, "partition": partition, "offset": offset,
        "publishedAt": draft.published_at, "payload": draft.payload, "headers": draft.headers,
        "correlationId": draft.correlation_id, "idempotencyKey": draft.idempotency_key,
    }
    if draft.run_at is not None:
        value["runAt"] = draft.run_at
    if draft.caused_by is not None:
        value["causedBy"] = draft.caused_by
    return value


def message_json(topic: str, partition: int, offset: int, draft: Draft) -> str:
    """The stored JSON of a published draft: its checked payload text embedded as is."""
    assert draft.payload_json is not None
    value: dict[str, Any] = {
        "id": draft.id, "topic": topic, "key": draft.key, "partition": partition, "offset": offset,
        "publishedAt": draft.published_at, "payload": json_fragment(draft.payload_json), "headers": draft.headers,
        "correlationId": draft.correlation_id, "idempotencyKey": draft.idempotency_key,
    }
    if draft.run_at is not None:
        value["runAt"] = draft.run_at
    if draft.caused_by is not None:
        value["causedBy"] = draft.caused_by
    return dumps_checked(value)


def _prepared_rows(durable: DurablePlane, namespace: str, texts: Iterable[tuple[str, str]]) -> Iterator[EncodedRow]:
    """Rows of published messages, lazily, so a store streaming them (COPY) sends the
    first while the rest are encoded. Every text in them was checked by the publisher
    (and the ids are its own), so only the size is checked here."""
    kind = classify_namespace(namespace)
    table, at, limit = table_for_kind(kind), now_ms(), durable.max_record_bytes
    for id, text in texts:
        if utf8_size(text) > limit:
            check_size(text, limit=limit, what=f"{namespace}/{id}")  # raises, with the record's name
        yield EncodedRow(namespace, id, kind, table, text, at, None)


def append(durable: DurablePlane, topic: str, partition: int, drafts: Sequence[Draft], *,
           notify: str | None = None) -> dict[str, int]:
    """Append ``drafts`` to one partition; every draft id's offset (a draft whose id is
    already in the log keeps the offset it had: that is how idempotency keys dedupe).
    ``notify``: a hot-plane broadcast channel the store notifies as the append commits."""
    namespace = topic_msg_namespace(topic)
    by_id = {d.id: d for d in drafts}

    def build(new_ids: list[str], first: int) -> Iterable[EncodedRow]:
        if all(by_id[id].payload_json is not None for id in new_ids):
            return _prepared_rows(durable, namespace, ((id, message_json(topic, partition, first + i, by_id[id]))
                                                       for i, id in enumerate(new_ids)))
        return durable.encode_all(RecordWrite(namespace, id, message_value(topic, partition, first + i, by_id[id]),
                                              checked=True) for i, id in enumerate(new_ids))

    def counter(next_offset: int) -> EncodedRow:
        value = {"topic": topic, "partition": partition, "next": next_offset}
        return durable.encode_all([RecordWrite(TOPIC_STATE, counter_id(topic, partition), value)])[0]

    return durable.store.append_log(durable.scope, LogAppend(
        table="runs", namespace=namespace, partition=partition, ids=list(by_id),
        maybe_present=[d.id for d in drafts if d.idempotency_key is not None], counter_table="records",
        counter_namespace=TOPIC_STATE, counter_id=counter_id(topic, partition), build=build, counter=counter,
        notify=notify))


def read(durable: DurablePlane, topic: str, partition: int, *, after: int, limit: int) -> list[StoredRecord]:
    """Up to ``limit`` messages of one partition with offsets above ``after``, in order."""
    return durable.store.read_log(durable.scope, "runs", topic_msg_namespace(topic), partition, after, limit)


def next_offsets(durable: DurablePlane, topic: str, partitions: int) -> list[int]:
    """Each partition's next free offset (0 before its first message)."""
    ids = [counter_id(topic, p) for p in range(partitions)]
    found = {r.id: r.value.get("next", 0) for r in durable.get_many(TOPIC_STATE, ids)}
    return [int(found.get(id, 0)) for id in ids]

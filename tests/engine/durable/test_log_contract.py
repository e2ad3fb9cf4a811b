"""The retained log's contract (append_log / read_log), on every durable backend:
offsets per partition from 0, never reused, read back in order; an id appended twice
keeps its offset; concurrent appenders never share an offset and never leave a gap."""

from __future__ import annotations

import threading

import pytest

from oqronkit import DurablePlane
from oqronkit.errors import InvalidRecord, RecordTooLarge
from oqronkit.topics import log
from oqronkit.topics.log import Draft


def draft(id: str, payload: object = None, key: str | None = None, idempotency_key: str | None = None) -> Draft:
    return Draft(id=id, key=key, payload=payload, headers={"h": "v"}, correlation_id=None,
                 idempotency_key=idempotency_key, published_at=1_700_000_000_000)


def test_offsets_count_from_zero_per_partition_and_read_back_in_order(durable: DurablePlane):
    assert log.append(durable, "orders", 0, [draft("a", 1), draft("b", 2)]) == {"a": 0, "b": 1}
    assert log.append(durable, "orders", 1, [draft("c", 3)]) == {"c": 0}
    assert log.append(durable, "orders", 0, [draft("d", 4)]) == {"d": 2}
    got = log.read(durable, "orders", 0, after=-1, limit=10)
    assert [(r.id, r.value["offset"], r.value["payload"]) for r in got] == [("a", 0, 1), ("b", 1, 2), ("d", 2, 4)]
    assert got[0].record_kind == "message" and got[0].namespace == "topic_msg:orders"
    assert got[0].value == {"id": "a", "topic": "orders", "key": None, "partition": 0, "offset": 0,
                            "publishedAt": 1_700_000_000_000, "payload": 1, "headers": {"h": "v"},
                            "correlationId": None, "idempotencyKey": None}
    assert [r.id for r in log.read(durable, "orders", 0, after=0, limit=1)] == ["b"]
    assert [r.id for r in log.read(durable, "orders", 1, after=-1, limit=10)] == ["c"]
    assert log.read(durable, "other", 0, after=-1, limit=10) == []
    assert log.next_offsets(durable, "orders", 3) == [3, 1, 0]


def test_an_idempotent_id_appended_again_keeps_its_offset_and_takes_none(durable: DurablePlane):
    log.append(durable, "t", 0, [draft("a", idempotency_key="ka"), draft("b", idempotency_key="kb")])
    assert log.append(durable, "t", 0, [draft("b", idempotency_key="kb"), draft("c")]) == {"b": 1, "c": 2}
    assert log.append(durable, "t", 0, [draft("a", idempotency_key="ka")]) == {"a": 0}
    assert [r.value["offset"] for r in log.read(durable, "t", 0, after=-1, limit=10)] == [0, 1, 2]
    assert log.next_offsets(durable, "t", 1) == [3]


def test_offsets_are_never_reused_after_messages_are_deleted(durable: DurablePlane):
    log.append(durable, "t", 0, [draft("a"), draft("b")])
    durable.delete_many("topic_msg:t", ["a", "b"])
    assert log.read(durable, "t", 0, after=-1, limit=10) == []
    assert log.append(durable, "t", 0, [draft("c")]) == {"c": 2}
    assert [r.id for r in log.read(durable, "t", 0, after=-1, limit=10)] == ["c"]


def test_a_message_the_plane_refuses_appends_nothing_and_takes_no_offset(durable: DurablePlane):
    with pytest.raises((InvalidRecord, RecordTooLarge)):
        log.append(durable, "t", 0, [draft("ok"), draft("big", "x" * 100_000)])
    assert log.read(durable, "t", 0, after=-1, limit=10) == []
    assert log.append(durable, "t", 0, [draft("ok")]) == {"ok": 0}


def test_concurrent_appenders_share_no_offset_and_leave_no_gap(durable: DurablePlane):
    errors: list[BaseException] = []

    def publisher(n: int) -> None:
        try:
            for i in range(10):
                log.append(durable, "busy", 0, [draft(f"{n}-{i}-a"), draft(f"{n}-{i}-b")])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=publisher, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    got = log.read(durable, "busy", 0, after=-1, limit=1000)
    assert [r.value["offset"] for r in got] == list(range(120))
    assert len({r.id for r in got}) == 120

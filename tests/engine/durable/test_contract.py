"""The durable plane's contract: every backend passes these tests unchanged."""

from __future__ import annotations

import json
import threading

import pytest

from oqronkit import ABSENT, DurablePlane, InvalidNamespace, InvalidRecord, RecordTooLarge, RecordWrite
from oqronkit.errors import DuplicateRecord


def run(i: int, **overrides) -> dict:
    value = {
        "id": f"r{i:05d}", "name": "emails", "module": "queue", "status": "completed",
        "startedAt": 1_000_000 + i, "input": {"to": f"u{i}@x.com"}, "logs": [],
    }
    value.update(overrides)
    return value


def test_put_get_roundtrip_keeps_json_and_stamps_kind(durable: DurablePlane):
    value = {"camelCase": 1, "nested": {"list": [1, "two", None, True]}, "unicode": "é✓"}
    durable.put("queue_job:emails", "j1", value)
    record = durable.get("queue_job:emails", "j1")
    assert record is not None
    assert record.value == value
    assert record.record_kind == "job"
    assert record.namespace == "queue_job:emails" and record.id == "j1"
    assert record.inserted_at > 1_600_000_000_000
    assert record.expires_at is None


def test_numbers_come_back_exactly(durable: DurablePlane):
    """Integers beyond 64 bits stay integers (the fast decoder would make them floats:
    codec.decode_json routes them to the stdlib), floats keep every bit; a checked
    write (the worker's run records) likewise."""
    value = {"big": 123456789012345678901234567890, "neg": -(2**64) - 1, "u64": 2**64 - 1,
             "f": 0.1, "tiny": 5e-324, "id": "1234567890123456789012345"}
    # (Not 1e308: jsonb keeps numbers as numeric and writes that one back in 309 digits,
    # an int to any JSON reader.)
    durable.put_many([RecordWrite("queue_job:emails", "j1", value), RecordWrite("runs", "r1", value, checked=True)])
    for namespace, id in (("queue_job:emails", "j1"), ("runs", "r1")):
        got = durable.get(namespace, id).value
        assert got == value and all(type(got[k]) is type(v) for k, v in value.items())
        [listed] = [r.value for r in durable.get_many(namespace, [id])]
        assert repr(sorted(listed.items())) == repr(sorted(value.items()))  # jsonb sorts keys


def test_get_missing_returns_none(durable: DurablePlane):
    assert durable.get("runs", "nope") is None
    assert durable.get_many("runs", ["a", "b"]) == []


def test_put_replaces_value_but_keeps_inserted_at(durable: DurablePlane):
    durable.put("cron", "nightly", {"v": 1})
    first = durable.get("cron", "nightly")
    durable.put("cron", "nightly", {"v": 2}, expires_at=123)
    second = durable.get("cron", "nightly")
    assert second.value == {"v": 2}
    assert second.expires_at == 123
    assert second.inserted_at == first.inserted_at
    assert second.record_kind == "definition"


def test_reads_return_copies(durable: DurablePlane):
    durable.put("cron", "a", {"list": [1]})
    durable.get("cron", "a").value["list"].append(2)
    assert durable.get("cron", "a").value == {"list": [1]}


def test_put_many_routes_each_row_to_its_table_and_kind(durable: DurablePlane):
    written = durable.put_many([
        RecordWrite("queue_job:emails", "j1", {"a": 1}),
        RecordWrite("queue_dlq:emails", "d1", {"a": 2}),
        RecordWrite("runs", "r1", run(1)),
        RecordWrite("topic_msg:orders", "m1", {"publishedAt": 5}),
        RecordWrite("queue", "emails", {"paused": False}),
        RecordWrite("module_logs:cron", "l1", {"msg": "x"}),
        RecordWrite("my_custom", "c1", {"x": 1}),
    ])
    assert written == 7
    kinds = {
        ns: durable.get(ns, id).record_kind
        for ns, id in [("queue_job:emails", "j1"), ("queue_dlq:emails", "d1"), ("runs", "r1"),
                       ("topic_msg:orders", "m1"), ("queue", "emails"), ("module_logs:cron", "l1"),
                       ("my_custom", "c1")]
    }
    assert kinds == {
        "queue_job:emails": "job", "queue_dlq:emails": "dlq", "runs": "run",
        "topic_msg:orders": "message", "queue": "control", "module_logs:cron": "log",
        "my_custom": "record",
    }
    assert durable.count(kind="job") == 1
    assert durable.count(kind="dlq") == 1
    assert durable.count(kind="run") == 1
    assert durable.count() == 7


def test_put_many_large_batch(durable: DurablePlane):
    durable.put_many(RecordWrite("runs", f"r{i:05d}", run(i)) for i in range(2500))
    assert durable.count("runs") == 2500
    assert durable.get("runs", "r02499").value["startedAt"] == 1_002_499


def test_put_many_rejects_duplicate_keys_and_writes_nothing(durable: DurablePlane):
    with pytest.raises(InvalidRecord):
        durable.put_many([RecordWrite("runs", "a", run(1)), RecordWrite("runs", "a", run(2))])
    assert durable.count("runs") == 0


def test_bad_value_in_batch_writes_nothing(durable: DurablePlane):
    with pytest.raises(InvalidRecord):
        durable.put_many([RecordWrite("runs", "a", run(1)), RecordWrite("runs", "b", {"x": object()})])
    assert durable.count("runs") == 0


def test_insert_is_idempotent_and_keeps_first_value(durable: DurablePlane):
    assert durable.insert("queue_job:q", "job-1", {"v": 1}) is True
    assert durable.insert("queue_job:q", "job-1", {"v": 2}) is False
    assert durable.get("queue_job:q", "job-1").value == {"v": 1}
    inserted = durable.insert_many([
        RecordWrite("queue_job:q", "job-1", {"v": 3}),
        RecordWrite("queue_job:q", "job-2", {"v": 3}),
    ])
    assert inserted == {("queue_job:q", "job-2")}


def test_insert_new_writes_all_or_nothing(durable: DurablePlane):
    rows = [(f"job-{i}", json.dumps({"id": f"job-{i}", "text": "tab\there \\ \"quoted\" é"})) for i in range(300)]
    durable.insert_new_json("queue_job:q", rows)
    assert durable.count("queue_job:q") == 300
    record = durable.get("queue_job:q", "job-7")
    assert record.record_kind == "job" and record.value == {"id": "job-7", "text": "tab\there \\ \"quoted\" é"}
    # One taken id fails the whole batch: none of its fresh rows stays behind.
    with pytest.raises(DuplicateRecord):
        durable.insert_new_json("queue_job:q", [("new-1", '{"v":1}'), ("job-3", '{"v":2}'), ("new-2", '{"v":3}')])
    assert durable.get("queue_job:q", "new-1") is None and durable.get("queue_job:q", "new-2") is None
    assert durable.get("queue_job:q", "job-3").value["id"] == "job-3"
    assert durable.count("queue_job:q") == 300


def test_scan_statuses_walks_ids_of_the_wanted_statuses(durable: DurablePlane):
    statuses = ["waiting", "active", "delayed", "blocked", "waiting-dependencies"]
    durable.put_many(RecordWrite("queue_job:q", f"j{i:04d}", {"status": statuses[i % 5]}) for i in range(1_234))
    durable.put_many([RecordWrite("queue_job:q", "no-status", {"x": 1}),
                      RecordWrite("queue_job:other", "elsewhere", {"status": "waiting"})])
    durable.scoped(project="someone-else", environment=durable.scope.environment).put(
        "queue_job:q", "theirs", {"status": "waiting"})
    found = list(durable.scan_statuses("queue_job:q", ("waiting", "delayed"), page=100))
    expected = {(f"j{i:04d}", statuses[i % 5]) for i in range(1_234) if i % 5 in (0, 2)}
    assert set(found) == expected and len(found) >= len(expected)
    assert list(durable.scan_statuses("queue_job:q", ("nothing-has-this",), page=100)) == []
    assert list(durable.scan_statuses("queue_job:empty", ("waiting",))) == []


def test_get_fields_reads_the_named_fields_of_the_rows_that_exist(durable: DurablePlane):
    durable.put_many([RecordWrite("queue_job:q", "a", {"status": "active", "workerId": "w1", "updatedAt": 5,
                                                        "payload": {"big": "x" * 500}}),
                      RecordWrite("queue_job:q", "b", {"status": "waiting", "updatedAt": None, "tags": [1, 2]}),
                      RecordWrite("queue_job:other", "c", {"status": "waiting"})])
    durable.scoped(project="someone-else", environment=durable.scope.environment).put(
        "queue_job:q", "theirs", {"status": "waiting"})
    found = durable.get_fields("queue_job:q", ["a", "b", "c", "theirs", "missing", "a"],
                               ("status", "workerId", "updatedAt", "tags"))
    # A field the row lacks is left out; one it holds as null is there.
    assert found == {"a": {"status": "active", "workerId": "w1", "updatedAt": 5},
                     "b": {"status": "waiting", "updatedAt": None, "tags": [1, 2]}}
    assert durable.get_fields("queue_job:q", ["a"], ("nothing",)) == {"a": {}}
    assert durable.get_fields("queue_job:q", [], ("status",)) == {}


def test_insert_race_has_exactly_one_winner(durable: DurablePlane):
    wins: list[bool] = []
    barrier = threading.Barrier(8)

    def contender(n: int) -> None:
        barrier.wait()
        wins.append(durable.insert("queue_job:q", "same", {"by": n}))

    threads = [threading.Thread(target=contender, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wins.count(True) == 1


def test_delete(durable: DurablePlane):
    durable.put_many([RecordWrite("runs", f"r{i}", run(i)) for i in range(3)])
    assert durable.delete("runs", "r0") is True
    assert durable.delete("runs", "r0") is False
    assert durable.delete_many("runs", ["r1", "r2", "zz"]) == 2
    assert durable.count("runs") == 0


def test_compare_and_set_absent(durable: DurablePlane):
    assert durable.compare_and_set("cron_durable", "c", expect=ABSENT, value={"next": 1}) is True
    assert durable.compare_and_set("cron_durable", "c", expect=ABSENT, value={"next": 2}) is False
    assert durable.get("cron_durable", "c").value == {"next": 1}


def test_compare_and_set_on_fields(durable: DurablePlane):
    durable.put("queue", "emails", {"paused": False, "version": 1, "meta": {"a": [1]}})
    assert durable.compare_and_set("queue", "emails", expect={"version": 2}, value={"x": 1}) is False
    assert durable.compare_and_set(
        "queue", "emails", expect={"version": 1, "meta": {"a": [1]}},
        value={"paused": True, "version": 2},
    ) is True
    assert durable.get("queue", "emails").value == {"paused": True, "version": 2}
    # A missing field matches None.
    assert durable.compare_and_set("queue", "emails", expect={"owner": None}, value={"owner": "n1"}) is True
    assert durable.compare_and_set("queue", "missing", expect={"owner": None}, value={"x": 1}) is False


def test_compare_and_set_delete(durable: DurablePlane):
    durable.put("queue_job:q", "j", {"status": "active", "token": 7})
    assert durable.compare_and_set("queue_job:q", "j", expect={"token": 8}, value=None) is False
    assert durable.compare_and_set("queue_job:q", "j", expect={"token": 7}, value=None) is True
    assert durable.get("queue_job:q", "j") is None


def test_compare_and_set_race_has_exactly_one_winner(durable: DurablePlane):
    durable.put("cron_durable", "tick", {"slot": 0})
    wins: list[bool] = []
    barrier = threading.Barrier(6)

    def contender(n: int) -> None:
        barrier.wait()
        wins.append(durable.compare_and_set("cron_durable", "tick", expect={"slot": 0}, value={"slot": 1, "by": n}))

    threads = [threading.Thread(target=contender, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wins.count(True) == 1


def test_list_newest_first_with_keyset_pages(durable: DurablePlane):
    durable.put_many(RecordWrite("runs", f"r{i:05d}", run(i)) for i in range(25))
    seen: list[str] = []
    cursor = None
    while True:
        page = durable.list("runs", order="started", descending=True, limit=10, cursor=cursor)
        seen.extend(r.id for r in page.records)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [f"r{i:05d}" for i in reversed(range(25))]


def test_list_ties_on_started_break_on_id(durable: DurablePlane):
    durable.put_many(RecordWrite("runs", f"r{i}", run(0)) for i in range(7))
    first = durable.list("runs", order="started", descending=True, limit=4)
    second = durable.list("runs", order="started", descending=True, limit=4, cursor=first.next_cursor)
    ids = [r.id for r in first.records + second.records]
    assert ids == sorted(ids, reverse=True)
    assert len(set(ids)) == 7 and second.next_cursor is None


def test_list_filters_on_indexed_run_fields(durable: DurablePlane):
    rows = [
        run(1, status="failed"), run(2, status="failed", name="reports"),
        run(3, status="completed"), run(4, status="failed", module="cron"),
        run(5, status="failed"),
    ]
    durable.put_many(RecordWrite("runs", r["id"], r) for r in rows)
    ids = lambda page: [r.id for r in page.records]  # noqa: E731
    assert ids(durable.list("runs", status="failed", order="started", descending=True)) == [
        "r00005", "r00004", "r00002", "r00001"]
    assert ids(durable.list("runs", status="failed", name="emails", module="queue", order="started")) == [
        "r00001", "r00005"]
    window = durable.list("runs", started_from=1_000_002, started_to=1_000_005, order="started")
    assert ids(window) == ["r00002", "r00003", "r00004"]


def test_list_by_kind_across_namespaces_in_insert_order(durable: DurablePlane):
    durable.put("queue_dlq:a", "1", {"x": 1})
    durable.put("queue_dlq:b", "2", {"x": 2})
    durable.put("queue_job:a", "3", {"x": 3})
    page = durable.list(kind="dlq")
    assert sorted((r.namespace, r.id) for r in page.records) == [("queue_dlq:a", "1"), ("queue_dlq:b", "2")]
    assert durable.list("queue_job:a", kind="dlq").records == []


def test_list_inserted_order_pages(durable: DurablePlane):
    durable.put_many(RecordWrite("topic_msg:t", f"m{i:03d}", {"i": i}) for i in range(12))
    first = durable.list("topic_msg:t", limit=5)
    rest = durable.list("topic_msg:t", limit=50, cursor=first.next_cursor)
    assert len(first.records) == 5 and len(rest.records) == 7
    assert {r.id for r in first.records} | {r.id for r in rest.records} == {f"m{i:03d}" for i in range(12)}


def test_bad_cursor_and_limit_are_clear_errors(durable: DurablePlane):
    with pytest.raises(InvalidRecord):
        durable.list("runs", cursor="not-a-cursor", order="started")
    page = durable.list("runs", limit=1)
    assert page.next_cursor is None
    durable.put_many(RecordWrite("runs", f"r{i}", run(i)) for i in range(2))
    cursor = durable.list("runs", limit=1).next_cursor
    with pytest.raises(InvalidRecord):
        durable.list("runs", cursor=cursor, order="started")
    with pytest.raises(InvalidRecord):
        durable.list("runs", limit=0)


def test_count_by_namespace(durable: DurablePlane):
    durable.put_many([
        RecordWrite("queue_dlq:emails", "1", {}), RecordWrite("queue_dlq:emails", "2", {}),
        RecordWrite("queue_dlq:reports", "3", {}), RecordWrite("queue_job:emails", "4", {}),
    ])
    assert durable.count_by_namespace("dlq") == {"queue_dlq:emails": 2, "queue_dlq:reports": 1}
    assert durable.count("queue_job:emails") == 1


def test_prune_expired(durable: DurablePlane):
    durable.put("cache", "a", {}, expires_at=100)
    durable.put("runs", "b", run(1), expires_at=200)
    durable.put("queue_job:q", "c", {}, expires_at=300)
    durable.put("queue_job:q", "d", {})
    assert durable.prune_expired(now=200) == 2
    assert durable.get("queue_job:q", "c") is not None
    assert durable.get("queue_job:q", "d") is not None
    assert durable.prune_expired(now=10**15) == 1


def test_prune_older_than_is_bounded(durable: DurablePlane):
    durable.put_many(RecordWrite("runs", f"r{i}", run(i)) for i in range(5))
    assert durable.prune_older_than("runs", cutoff_ms=0) == 0
    assert durable.prune_older_than("runs", cutoff_ms=10**15, limit=3) == 3
    assert durable.count("runs") == 2


def test_scopes_are_isolated(durable: DurablePlane):
    other = durable.scoped(project=durable.scope.project, environment="production")
    durable.put("runs", "same-id", run(1))
    other.put("runs", "same-id", run(2, status="failed"))
    other.put("queue_dlq:q", "d", {})
    other.put("cache", "x", {}, expires_at=1)
    assert durable.get("runs", "same-id").value["status"] == "completed"
    assert other.get("runs", "same-id").value["status"] == "failed"
    assert durable.count_by_namespace("dlq") == {}
    assert [r.id for r in durable.list("runs", status="failed", order="started").records] == []
    assert durable.prune_expired(now=10**15) == 0
    assert other.count("cache") == 1
    assert durable.delete("runs", "same-id") and other.get("runs", "same-id") is not None


def test_record_size_limit(durable: DurablePlane):
    with pytest.raises(RecordTooLarge, match="limit"):
        durable.put("runs", "big", {"blob": "x" * (64 * 1024)})
    assert durable.get("runs", "big") is None


def circular() -> dict:
    value: dict = {"name": "loop"}
    value["self"] = value
    return value


def too_deep(levels: int = 100_000) -> dict:
    value: dict = {}
    for _ in range(levels):
        value = {"x": value}
    return value


@pytest.mark.parametrize("bad", [[1, 2], "text", None, {"x": float("nan")}, {"x": {1, 2}}, circular(), too_deep()],
                         ids=["list", "str", "none", "nan", "set", "circular", "too-deep"])
def test_non_object_or_non_json_values_are_refused(durable: DurablePlane, bad):
    with pytest.raises(InvalidRecord):
        durable.put("runs", "bad", bad)
    assert durable.get("runs", "bad") is None


@pytest.mark.parametrize("namespace,id", [("", "a"), ("  ", "a"), ("runs", ""), (None, "a"), ("runs", 5)])
def test_bad_namespace_or_id(durable: DurablePlane, namespace, id):
    with pytest.raises(InvalidNamespace):
        durable.put(namespace, id, {})


@pytest.mark.parametrize("bad", [5, None, b"a"])
def test_reads_and_deletes_refuse_ids_that_are_not_strings(durable: DurablePlane, bad):
    durable.put("queue_job:q", "5", {})
    with pytest.raises(InvalidNamespace, match="must be a string"):
        durable.get("queue_job:q", bad)
    with pytest.raises(InvalidNamespace, match="must be a string"):
        durable.delete_many("queue_job:q", ["5", bad])
    assert durable.get("queue_job:q", "5") is not None  # nothing was deleted
    assert durable.get("queue_job:q", "") is None  # an empty id matches nothing


def test_ids_and_namespaces_with_odd_characters(durable: DurablePlane):
    odd = "a'b\"c;--%_\\ é 🎉"
    durable.put(f"queue_job:{odd}", odd, {"k": odd})
    assert durable.get(f"queue_job:{odd}", odd).value == {"k": odd}
    assert durable.count(f"queue_job:{odd}") == 1


def test_apply_moves_atomically(durable: DurablePlane):
    durable.put("queue_job:q", "j1", {"status": "active"})
    durable.put("queue_job:q", "j2", {"status": "active"})
    durable.apply(
        puts=[RecordWrite("queue_dlq:q", "j1", {"status": "dead"}), RecordWrite("runs", "r1", run(1))],
        deletes=[("queue_job:q", "j1"), ("queue_job:q", "missing")],
    )
    assert durable.get("queue_job:q", "j1") is None
    assert durable.get("queue_dlq:q", "j1").record_kind == "dlq"
    assert durable.get("runs", "r1") is not None
    assert durable.get("queue_job:q", "j2") is not None


def test_apply_deletes_a_key_it_also_writes(durable: DurablePlane):
    # Writes first, then deletes: a key in both ends deleted.
    durable.put("queue_job:q", "j1", {"status": "active"})
    durable.apply(puts=[RecordWrite("queue_job:q", "j1", {"status": "done"}), RecordWrite("runs", "r1", run(1))],
                  deletes=[("queue_job:q", "j1")])
    assert durable.get("queue_job:q", "j1") is None
    assert durable.get("runs", "r1").value == run(1)


@pytest.mark.parametrize("queues", [2, 12])  # few statements, or more than one statement joins
def test_apply_across_many_namespaces(durable: DurablePlane, queues: int):
    for n in range(queues):
        durable.put(f"queue_job:q{n}", "j", {"status": "active"})
    durable.apply(puts=[RecordWrite(f"queue_dlq:q{n}", "j", {"n": n}) for n in range(queues)]
                  + [RecordWrite("runs", f"r{n}", run(n), new=True) for n in range(queues)],
                  deletes=[(f"queue_job:q{n}", "j") for n in range(queues)])
    for n in range(queues):
        assert durable.get(f"queue_job:q{n}", "j") is None
        assert durable.get(f"queue_dlq:q{n}", "j").value == {"n": n}
        assert durable.get("runs", f"r{n}").value == run(n)


def test_apply_writes_rows_hinted_new_and_overwrites_them_when_the_hint_is_wrong(durable: DurablePlane):
    # RecordWrite.new lets a store skip conflict arbitration; a key that turns out to be
    # taken must still end like a put: value replaced, inserted_at kept, the rest of the
    # batch (other rows, deletes) written with it.
    durable.put("runs", "r1", run(1, status="running"))
    first = durable.get("runs", "r1")
    durable.put("queue_job:q", "j1", {"status": "active"})
    durable.apply(puts=[RecordWrite("runs", "r2", run(2), new=True)], deletes=[])
    assert durable.get("runs", "r2").value == run(2)
    durable.apply(
        puts=[RecordWrite("runs", "r1", run(1, status="completed"), new=True),
              RecordWrite("runs", "r3", run(3), new=True), RecordWrite("runs", "r4", run(4))],
        deletes=[("queue_job:q", "j1")],
    )
    again = durable.get("runs", "r1")
    assert again.value["status"] == "completed" and again.inserted_at == first.inserted_at
    assert durable.get("runs", "r3").value == run(3) and durable.get("runs", "r4").value == run(4)
    assert durable.get("queue_job:q", "j1") is None
    durable.apply(puts=[RecordWrite("runs", "r2", run(2, status="failed"), new=True)], deletes=[])
    assert durable.get("runs", "r2").value["status"] == "failed"


def test_apply_with_bad_value_changes_nothing(durable: DurablePlane):
    durable.put("queue_job:q", "j1", {"status": "active"})
    with pytest.raises(InvalidRecord):
        durable.apply(puts=[RecordWrite("queue_dlq:q", "j1", {"x": object()})], deletes=[("queue_job:q", "j1")])
    assert durable.get("queue_job:q", "j1") is not None


def test_list_one_correlation_id_across_a_table_in_insert_order(durable: DurablePlane):
    rows = [run(1), run(2), run(3), run(4)]
    rows[0]["correlationId"], rows[2]["correlationId"], rows[3]["correlationId"] = "c-1", "c-1", "c-2"
    durable.put_many(RecordWrite("runs", r["id"], r) for r in rows)
    durable.put("topic_msg:orders", "m1", {"publishedAt": 1, "correlationId": "c-1"})
    durable.put("topic_msg:orders", "m2", {"publishedAt": 2, "correlationId": {"not": "text"}})
    durable.put("queue_job:emails", "j1", {"status": "waiting", "correlationId": "c-1"})
    page = durable.list(table="runs", correlation="c-1", limit=2)
    rest = durable.list(table="runs", correlation="c-1", limit=2, cursor=page.next_cursor)
    found = [(r.inserted_at, r.id) for r in page.records + rest.records]
    assert len(page.records) == 2 and rest.next_cursor is None
    assert found == sorted(found) and {id for _, id in found} == {"r00001", "r00003", "m1"}
    assert [r.id for r in durable.list(table="jobs", correlation="c-1").records] == ["j1"]
    assert durable.list(table="records", correlation="c-1").records == []
    with pytest.raises(InvalidNamespace):
        durable.list(table="runs")

"""What the contract suite cannot see about the Redis durable store: listings checked
row for row against the memory backend on random data (ties, floats, missing and odd
startedAt values, several namespaces, both directions, windows and cursors), the key
layout, indexes kept in step with the rows through every kind of write, pruning in
batches, compare-and-set under contention, and the factories of the redis modes."""

from __future__ import annotations

import json
import random
import struct
import threading
from collections.abc import Iterator

import pytest
import redis
from redis.crc import key_slot

from oqronkit import ABSENT, OqronConfig
from oqronkit.backends import open_durable_store
from oqronkit.backends.memory import MemoryDurableStore
from oqronkit.backends.redis import RedisDurableStore, RedisHotPlane
from oqronkit.backends.redis.rows import FILTER_FIELDS, NO_START, decode_row, filter_index, started_key
from oqronkit.backends.redis.store import PRUNE_BATCH
from oqronkit.backends.types import EncodedRow, ListQuery, Scope, sort_key
from oqronkit.engine import open_hot_plane
from oqronkit.namespaces import classify_namespace, table_for_kind
from tests.services import drop_redis_project, require_redis


@pytest.fixture
def redis_url() -> str:
    return require_redis()


@pytest.fixture
def scope(scope_names) -> Scope:
    return Scope(*scope_names)


@pytest.fixture
def store(redis_url, scope_names) -> Iterator[RedisDurableStore]:
    s = RedisDurableStore(redis_url)
    s.ensure_schema()
    try:
        yield s
    finally:
        s.close()
        drop_redis_project(redis_url, scope_names[0])


def row(namespace: str, id: str, value: dict, inserted_at: int, expires_at: int | None = None) -> EncodedRow:
    kind = classify_namespace(namespace)
    return EncodedRow(namespace, id, kind, table_for_kind(kind), json.dumps(value), inserted_at, expires_at)


def keys_of(redis_url: str, scope: Scope) -> dict[str, str]:
    """Every key of the scope's durable store, with its type."""
    with redis.Redis.from_url(redis_url, decode_responses=True) as client:
        names = list(client.scan_iter(match=f"oqron:{scope.project}:{scope.environment}:*"))
        return {name: client.type(name) for name in names}


# -- listings against the reference -------------------------------------------------------


STATUSES = ["completed", "failed", "active"]
STARTS = [0, 1, -5, 1.5, -0.0, 2.25, 1e12, 1_700_000_000_000, 1_700_000_000_000.5, None, "7", True]


def random_rows(rng: random.Random) -> list[EncodedRow]:
    rows = []
    for n in range(400):
        namespace = rng.choice(["runs", "queue_job:a", "queue_job:b", "queue_dlq:a", "topic_msg:t"])
        value: dict = {"status": rng.choice(STATUSES), "name": rng.choice(["emails", "reports"]),
                       "module": rng.choice(["queue", "cron"])}
        started = rng.choice(STARTS + [rng.randint(-3, 40) for _ in range(6)])
        if started is not None:
            value["startedAt"] = started
        # Ids differ across namespaces: a kind listing pages by (key, id) on every backend,
        # so two rows sharing both in different namespaces would make the cursor skip one.
        rid = rng.choice(["r", "é", "Z", "a b", "🎉"]) + str(rng.randint(0, 60)) + namespace[-1]
        rows.append(row(namespace, rid, value, inserted_at=rng.choice([10, 10, 11, 500, 1_700_000_000_000 + n])))
    return rows


def random_query(rng: random.Random) -> ListQuery:
    namespace = rng.choice(["runs", "queue_job:a", "queue_job:b", "queue_dlq:a", None, None])
    kind = classify_namespace(namespace) if namespace else rng.choice(["job", "dlq", "run", "message"])
    order = rng.choice(["inserted", "started"])
    low = rng.choice([None, -5, 0, 1, 1.5, 20])
    return ListQuery(
        table=table_for_kind(kind), namespace=namespace, kind=rng.choice([kind, None]) if namespace else kind,
        status=rng.choice([None, None, "failed", "completed"]), name=rng.choice([None, None, "emails"]),
        module=rng.choice([None, None, "cron"]), started_from=low,
        started_to=rng.choice([None, 2, 30, 1e13]) if low is None or low < 2 else None,
        order=order, descending=rng.choice([True, False]), limit=rng.choice([1, 3, 7, 50, 1000]),
    )


def pages(store, scope: Scope, query: ListQuery) -> list[list[tuple[str, str]]]:
    """Walk every page of ``query`` the way the facade does (limit + 1, then a cursor)."""
    out: list[list[tuple[str, str]]] = []
    after = None
    for _ in range(500):
        found = store.list(scope, ListQuery(**{**_fields(query), "limit": query.limit + 1, "after": after}))
        page = found[:query.limit]
        out.append([(r.namespace, r.id) for r in page])
        if len(found) <= query.limit:
            return out
        after = (sort_key(page[-1], query.order), page[-1].id)
    raise AssertionError("pagination did not end")


def _fields(query: ListQuery) -> dict:
    return {name: getattr(query, name) for name in ListQuery.__dataclass_fields__}


@pytest.mark.parametrize("seed", range(4))
def test_listings_match_the_memory_backend_page_for_page(store, scope, seed):
    rng = random.Random(seed)
    memory = MemoryDurableStore()
    rows = random_rows(rng)
    unique = list({(r.namespace, r.id): r for r in rows}.values())
    for start in range(0, len(unique), 97):
        chunk = unique[start:start + 97]
        memory.put_many(scope, chunk)
        store.put_many(scope, chunk)
    doomed = [(r.table, r.namespace, r.id) for r in rng.sample(unique, 40)]
    memory.apply(scope, [], doomed)
    store.apply(scope, [], doomed)
    for _ in range(60):
        query = random_query(rng)
        assert pages(store, scope, query) == pages(memory, scope, query), query


def test_started_keys_sort_like_the_numbers():
    rng = random.Random(7)
    numbers = [0.0, -0.0, 1, -1, 1.5, -1.5, 1e300, -1e300, 5e-324, -5e-324, 1_700_000_000_000]
    numbers += [rng.uniform(-1e15, 1e15) for _ in range(500)] + [rng.randint(-10**9, 10**9) for _ in range(500)]
    by_key = sorted(numbers, key=started_key)
    assert [float(n) for n in by_key] == sorted(float(n) for n in numbers)
    assert started_key(-0.0) == started_key(0) and len(started_key(3.5)) == 16
    assert started_key(2**53) == f"{struct.unpack('>Q', struct.pack('>d', 2.0**53))[0] | 1 << 63:016x}"


# -- layout and index consistency ---------------------------------------------------------


def test_every_key_has_the_prefix_and_the_scope_shares_one_slot(store, scope, redis_url):
    store.put_many(scope, [row("runs", "r1", {"startedAt": 5}, 1, expires_at=9),
                           row("queue_job:a", "j1", {}, 1), row("cron", "c", {}, 1)])
    found = keys_of(redis_url, scope)
    prefix = f"oqron:{scope.project}:{scope.environment}:durable:"
    assert found and all(name.startswith(prefix) for name in found)
    assert len({key_slot(name.encode()) for name in found}) == 1


def assert_indexes_match_rows(redis_url: str, scope: Scope) -> None:
    """Every index holds exactly the entries of the rows (no stray or missing one), and
    the registry lists exactly the namespaces that hold rows."""
    base = f"oqron:{scope.project}:{scope.environment}:durable:{{{scope.project}:{scope.environment}:durable}}:"
    expected: dict[str, set[str]] = {}
    registries: dict[str, set[str]] = {}
    with redis.Redis.from_url(redis_url, decode_responses=True) as client:
        names = set(client.scan_iter(match=f"oqron:{scope.project}:{scope.environment}:durable:*"))
        rows_keys = [name for name in names if name.startswith(base + "rows:")]
        assert rows_keys, "no rows found: the tests leave some, so the key layout is not what this expects"
        for name in rows_keys:
            table, _, namespace = name.removeprefix(base + "rows:").partition(":")
            registries.setdefault(table, set()).add(namespace)
            for id, raw in client.hgetall(name).items():
                record = decode_row(namespace, id, raw)
                ins, st = raw[:16], raw[16:32]
                entries = [(f"{base}ins:{table}:{namespace}", ins + id)]
                if st != NO_START:
                    entries.append((f"{base}st:{table}:{namespace}", st + id))
                if record.expires_at is not None:
                    entries.append((f"{base}exp:{table}", f"{len(namespace.encode())}:{namespace}{id}"))
                for field in FILTER_FIELDS:
                    if isinstance(value := record.value.get(field), str):
                        entries.append((filter_index(base, table, "inserted", field, namespace, value), ins + id))
                        if st != NO_START:
                            entries.append((filter_index(base, table, "started", field, namespace, value), st + id))
                for key, member in entries:
                    expected.setdefault(key, set()).add(member)
        actual = {name: set(client.zrange(name, 0, -1)) for name in names if client.type(name) == "zset"}
        for table in ("records", "jobs", "runs"):
            assert set(client.hgetall(f"{base}nsk:{table}")) == registries.get(table, set())
    assert actual == expected


def test_indexes_stay_in_step_through_every_kind_of_write(store, scope, redis_url):
    rng = random.Random(3)
    for step in range(300):
        namespace = rng.choice(["runs", "queue_job:q", "queue_dlq:q", "cron", "module_logs:x"])
        id = f"k{rng.randint(0, 15)}"
        value = {"status": rng.choice([*STATUSES, None, 3]), "name": rng.choice(["a", "é b", ":x}", 7]),
                 "module": rng.choice(["queue", "cron", False]), "v": step}
        if rng.random() < 0.6:
            value["startedAt"] = rng.choice([step, step + 0.5, "x"])
        new = row(namespace, id, value, inserted_at=step, expires_at=rng.choice([None, step + 50]))
        table = new.table
        action = rng.choice(["put", "insert", "delete", "cas", "cas_delete", "apply", "prune", "old"])
        if action == "put":
            store.put_many(scope, [new])
        elif action == "insert":
            store.insert_many(scope, [new])
        elif action == "delete":
            store.delete_many(scope, table, namespace, [id, "missing"])
        elif action == "cas":
            store.compare_and_set(scope, table, namespace, id, rng.choice([ABSENT, {"v": step - 1}]), new)
        elif action == "cas_delete":
            store.compare_and_set(scope, table, namespace, id, {"status": "failed"}, None)
        elif action == "apply":
            store.apply(scope, [new], [(table, namespace, f"k{rng.randint(0, 15)}")])
        elif action == "prune":
            store.prune_expired(scope, table, step)
        else:
            store.prune_older_than(scope, table, namespace, step - 40, limit=3)
    assert_indexes_match_rows(redis_url, scope)


def test_prune_expired_works_in_batches_and_spares_renewed_rows(store, scope, redis_url):
    total = PRUNE_BATCH * 2 + 17
    store.put_many(scope, [row("cache", f"c{i}", {"i": i}, 1, expires_at=100 + i % 7) for i in range(total)])
    store.put_many(scope, [row("cache", "c0", {"renewed": True}, 1, expires_at=10**12)])
    assert store.prune_expired(scope, "records", 200) == total - 1
    assert [r.id for r in store.get_many(scope, "records", "cache", ["c0", "c1"])] == ["c0"]
    assert_indexes_match_rows(redis_url, scope)


def test_prune_older_than_takes_the_oldest_first(store, scope):
    store.put_many(scope, [row("runs", f"r{i}", {}, inserted_at=1_000 + i) for i in range(10)])
    assert store.prune_older_than(scope, "runs", "runs", 1_005, limit=3) == 3
    left = store.get_many(scope, "runs", "runs", [f"r{i}" for i in range(10)])
    assert sorted(r.id for r in left) == [f"r{i}" for i in range(3, 10)]
    assert store.prune_older_than(scope, "runs", "runs", 1_005, limit=100) == 2


def test_compare_and_set_loses_no_update_under_contention(store, scope):
    store.put_many(scope, [row("cron_durable", "n", {"n": 0}, 1)])

    def bump() -> None:
        for _ in range(25):
            while True:
                [current] = store.get_many(scope, "records", "cron_durable", ["n"])
                n = current.value["n"]
                if store.compare_and_set(scope, "records", "cron_durable", "n", {"n": n},
                                         row("cron_durable", "n", {"n": n + 1}, 99)):
                    break

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    [final] = store.get_many(scope, "records", "cron_durable", ["n"])
    assert final.value == {"n": 100} and final.inserted_at == 1


def test_rows_keep_their_metadata(store, scope):
    store.put_many(scope, [row("runs", "r", {"startedAt": 2.5, "x": "é"}, 1_700_000_000_123, expires_at=-5)])
    [found] = store.get_many(scope, "runs", "runs", ["r", "r"])
    assert (found.namespace, found.id, found.record_kind) == ("runs", "r", "run")
    assert (found.inserted_at, found.expires_at, found.value) == (1_700_000_000_123, -5, {"startedAt": 2.5, "x": "é"})
    assert store.supports_sql is False and store.has_table("oqron_kv") is False


# -- wiring -------------------------------------------------------------------------------


def test_the_redis_modes_open_redis_backends(redis_url):
    config = OqronConfig(mode="redis", database_url=None, redis_url=redis_url)
    durable, hot = open_durable_store(config), open_hot_plane(config)
    assert isinstance(durable, RedisDurableStore) and isinstance(hot, RedisHotPlane)
    durable.close()
    hot.close()
    mixed = OqronConfig(mode="redis-postgres", database_url="postgresql://u@127.0.0.1:5432/x", redis_url=redis_url)
    hot = open_hot_plane(mixed)
    assert isinstance(hot, RedisHotPlane)
    hot.close()

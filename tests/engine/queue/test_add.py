"""Adding jobs: durable first, idempotent ids, bulk in one round trip, bad input."""

from __future__ import annotations

import threading

import pytest

from oqronkit import BackendUnavailable, Engine, InvalidJob, OqronConfig, OqronError, Registry, UnknownQueue
from oqronkit.backends.memory import MemoryDurableStore
from oqronkit.backends.memory_hot import MemoryHotPlane
from oqronkit.durable import DurablePlane
from oqronkit.hot import HotPlaneFacade
from oqronkit.services.reconciler import Reconciler


def test_add_writes_a_waiting_job_and_signals_it(engine: Engine):
    q = engine.queue("emails")
    job = q.add({"to": "a@x.com"})
    stored = engine.durable.get("queue_job:emails", job.id)
    assert stored.record_kind == "job"
    assert stored.value["status"] == "waiting" and stored.value["data"] == {"to": "a@x.com"}
    assert stored.value["maxAttempts"] == 4  # default 3 retries
    assert q.counts()["waiting"] == 1


def test_job_id_is_an_idempotency_key(engine: Engine):
    q = engine.queue("emails")
    first = q.add({"v": 1}, job_id="order-42")
    again = q.add({"v": 2}, job_id="order-42")
    assert again.id == first.id and again.data == {"v": 1}
    assert engine.durable.count("queue_job:emails") == 1
    assert q.counts()["waiting"] == 1


def test_concurrent_adds_with_one_id_make_one_job(engine: Engine):
    q = engine.queue("emails")
    barrier = threading.Barrier(6)
    results = []

    def add(n: int) -> None:
        barrier.wait()
        results.append(q.add({"n": n}, job_id="same").data)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert engine.durable.count("queue_job:emails") == 1
    assert len({str(r) for r in results}) == 1
    assert q.counts()["waiting"] == 1


class CountingStore:
    """Wraps a real store and counts durable round trips (no behaviour changed)."""

    def __init__(self, store):
        self.store, self.calls = store, []

    def __getattr__(self, name):
        attr = getattr(self.store, name)
        if callable(attr):
            def counted(*args, **kwargs):
                self.calls.append(name)
                return attr(*args, **kwargs)
            return counted
        return attr


def test_add_bulk_is_one_durable_round_trip():
    store = CountingStore(MemoryDurableStore())
    durable = DurablePlane(store, project="p", environment="e")
    engine = Engine(OqronConfig(mode="memory", database_url=None, project="p", environment="e"),
                    registry=Registry(), durable=durable,
                    hot=HotPlaneFacade(MemoryHotPlane(), project="p", environment="e"))
    q = engine.queue("bulk")
    jobs = q.add_bulk([{"i": i} for i in range(1000)] + [{"data": {"i": "x"}, "job_id": "custom", "priority": 5}])
    assert len(jobs) == 1001 and jobs[-1].id == "custom" and jobs[-1].priority == 5
    assert store.calls == ["insert_many"]
    assert q.counts()["waiting"] == 1001
    store.calls.clear()
    assert len(q.add_bulk([{"i": i} for i in range(1000)])) == 1000  # plain payloads: one streamed insert
    assert store.calls == ["insert_new"]


def _circular() -> dict:
    payload: dict = {"order": 1}
    payload["again"] = [payload]
    return payload


@pytest.mark.parametrize("payload", [{"x": object()}, {"x": float("nan")}, {1, 2}, _circular()],
                         ids=["object", "nan", "set", "circular"])
def test_non_json_payload_is_refused_and_nothing_written(engine: Engine, payload):
    q = engine.queue("emails")
    with pytest.raises(InvalidJob, match="JSON"):
        q.add(payload)
    assert engine.durable.count("queue_job:emails") == 0


def test_oversized_payload_is_refused(engine: Engine):
    q = engine.queue("emails")
    with pytest.raises(InvalidJob, match="limit"):
        q.add({"blob": "x" * (engine.config.max_record_bytes + 1)})
    assert engine.durable.count("queue_job:emails") == 0


def test_bad_batch_writes_nothing(engine: Engine):
    q = engine.queue("emails")
    with pytest.raises(InvalidJob):
        q.add_bulk([{"ok": 1}, {"data": {"bad": object()}}])
    assert engine.durable.count("queue_job:emails") == 0


@pytest.mark.parametrize("bad,match", [(object(), "JSON"), ("too large", "limit")])
def test_a_bad_payload_deep_in_a_plain_bulk_writes_nothing(engine: Engine, bad, match):
    if bad == "too large":
        bad = "x" * (engine.config.max_record_bytes + 1)
    # Plain payloads stream to the database (COPY on Postgres) as they are encoded: a bad
    # one after hundreds of good ones must still leave nothing behind.
    q = engine.queue("emails")
    with pytest.raises(InvalidJob, match=match):
        q.add_bulk([{"i": i} for i in range(1200)] + [{"bad": bad}] + [{"i": i} for i in range(10)])
    assert engine.durable.count("queue_job:emails") == 0
    assert q.counts()["waiting"] == 0
    assert len(q.add_bulk([{"i": i} for i in range(5)])) == 5  # the connection is fine afterwards
    assert engine.durable.count("queue_job:emails") == 5


@pytest.mark.parametrize("options,match", [
    ({"priority": 5000}, "priority"), ({"priority": "high"}, "priority"), ({"delay": -1}, "negative"),
    ({"attempts": 0}, "attempts"), ({"job_id": ""}, "job_id"), ({"bogus": 1}, "Unknown add option"),
    ({"parent_failure": "explode"}, "parent_failure"), ({"backoff": {"type": "weird"}}, "backoff"),
])
def test_bad_options_are_clear_errors(engine: Engine, options, match):
    q = engine.queue("emails")
    with pytest.raises(OqronError, match=match):
        q.add({"x": 1}, **options)


def test_unknown_queue_is_a_clear_error(engine: Engine):
    with pytest.raises(UnknownQueue, match="nope"):
        engine.get_queue("nope")


def test_errors_inherit_natural_builtins():
    assert issubclass(InvalidJob, ValueError) and issubclass(UnknownQueue, LookupError)


class DownHotPlane(MemoryHotPlane):
    def signal(self, *args, **kwargs):
        raise BackendUnavailable("hot plane down (test)")


def test_add_survives_a_hot_plane_outage_and_the_reconciler_signals_later():
    durable = DurablePlane(MemoryDurableStore(), project="p", environment="e")
    down = HotPlaneFacade(DownHotPlane(), project="p", environment="e")
    config = OqronConfig(mode="memory", database_url=None, project="p", environment="e")
    registry = Registry()
    producer = Engine(config, registry=registry, durable=durable, hot=down)
    job = producer.queue("emails").add({"x": 1})
    assert durable.get("queue_job:emails", job.id).value["status"] == "waiting"
    healthy = Engine(config, registry=registry, durable=durable,
                     hot=HotPlaneFacade(MemoryHotPlane(), project="p", environment="e"))
    reconciler = Reconciler(healthy)
    assert reconciler.run(["emails"]) == 0  # missing once: not yet known to be lost
    assert reconciler.run(["emails"]) == 1
    assert healthy.hot.depths("emails", 0).ready == 1
    assert reconciler.run(["emails"]) == 0  # no duplicates


def test_delayed_job_is_stored_as_delayed(engine: Engine):
    q = engine.queue("emails")
    job = q.add({"x": 1}, delay=60)
    assert job.status == "delayed" and job.run_at is not None
    counts = q.counts()
    assert counts["delayed"] == 1 and counts["waiting"] == 0


def test_a_plain_bulk_takes_ascending_ids_and_stores_what_was_given(engine: Engine):
    # Ascending ids put the batch's rows at one place of the id index (ids.ascending_ids_at);
    # each job holds what a worker reads back: a tuple a list, an enum its value.
    q = engine.queue("emails")
    payloads = [{"i": i, "to": f"u{i}@x.com"} for i in range(300)] + [{"pair": (1, 2)}, {"n": None, "f": 1.5}]
    jobs = q.add_bulk(payloads)
    ids = [j.id for j in jobs[1:]]
    assert ids == sorted(ids) and len(set(ids)) == len(ids) and all(len(i) == 26 for i in ids)
    assert [j.data for j in jobs[-2:]] == [{"pair": [1, 2]}, {"n": None, "f": 1.5}]
    stored = {r.id: r.value["data"] for r in engine.durable.get_many("queue_job:emails", [j.id for j in jobs])}
    assert [stored[j.id] for j in jobs] == [j.data for j in jobs]

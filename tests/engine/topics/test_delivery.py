"""Consumer groups: every group receives every message once, through its own delivery
queue (jobs only while in flight), with a run per attempt naming the message."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

from oqronkit import Engine

from .conftest import running, wait_until


def topic_runs(engine: Engine, group: str) -> list[dict]:
    page = engine.durable.list("runs", limit=1000)
    return [r.value for r in page.records if r.value.get("group") == group]


def test_two_groups_each_receive_every_message_once_with_a_run_each(engine: Engine):
    orders = engine.topic("orders", partitions=2)
    seen: dict[str, list] = {"billing": [], "shipping": []}
    lock = threading.Lock()

    def handler_for(group: str):
        def handle(ctx):
            with lock:
                seen[group].append((ctx.message.id, ctx.data, ctx.group))
            return {"ok": ctx.data["n"]}
        return handle

    orders.subscribe("billing", start_from="earliest")(handler_for("billing"))
    orders.subscribe("shipping", start_from="earliest")(handler_for("shipping"))
    ids = orders.publish_many([{"payload": {"n": n}, "key": f"k{n % 5}"} for n in range(40)])
    with running(engine):
        wait_until(lambda: len(seen["billing"]) == 40 and len(seen["shipping"]) == 40, timeout=30)
        wait_until(lambda: engine.durable.count("queue_job:orders@billing") == 0
                   and engine.durable.count("queue_job:orders@shipping") == 0, timeout=20)
    for group in ("billing", "shipping"):
        assert sorted(m for m, _, _ in seen[group]) == sorted(ids)
        assert {g for _, _, g in seen[group]} == {group}
        runs = topic_runs(engine, group)
        assert len(runs) == 40
        assert {(r["module"], r["trigger"], r["topic"], r["status"]) for r in runs} == \
            {("topic", "topic", "orders", "completed")}
        assert sorted(r["messageId"] for r in runs) == sorted(ids)
    assert orders.lag("billing")["total"] == 0


def test_a_group_created_later_starts_at_latest_or_backfills_from_earliest(engine: Engine):
    t = engine.topic("late")
    old = t.publish_many([{"n": n} for n in range(5)])
    got: dict[str, list[str]] = {"new": [], "all": []}
    t.subscribe("new")(lambda ctx: got["new"].append(ctx.message.id))
    t.subscribe("all", start_from="earliest")(lambda ctx: got["all"].append(ctx.message.id))
    with running(engine):
        wait_until(lambda: len(got["all"]) == 5, timeout=20)
        wait_until(lambda: t.lag("new")["total"] == 0, timeout=20)
        fresh = t.publish({"n": 99})
        wait_until(lambda: got["new"] == [fresh] and len(got["all"]) == 6, timeout=20)
    assert sorted(got["all"]) == sorted([*old, fresh])


def test_replay_and_seek_move_a_group(engine: Engine):
    t = engine.topic("again")
    ids = t.publish_many([{"n": n} for n in range(6)])
    got: list[str] = []
    t.subscribe("g", start_from="earliest")(lambda ctx: got.append(ctx.message.id))
    with running(engine):
        wait_until(lambda: len(got) == 6, timeout=20)
        assert t.replay("g", 3) == 3
        wait_until(lambda: len(got) == 9, timeout=20)
        assert got[6:] == ids[3:]
        assert t.seek("g", "latest") == 0
        assert t.seek("g", datetime(2000, 1, 1, tzinfo=UTC)) == 6
        wait_until(lambda: len(got) == 15, timeout=20)
    assert sorted(got[9:]) == sorted(ids)


def test_a_filter_skips_messages_and_lag_pause_resume(engine: Engine):
    t = engine.topic("picky")
    got: list[int] = []
    t.subscribe("even", start_from="earliest", filter=lambda m: m.payload % 2 == 0)(
        lambda ctx: got.append(ctx.data))
    t.publish_many(list(range(10)))
    with running(engine):
        wait_until(lambda: sorted(got) == [0, 2, 4, 6, 8], timeout=20)
        t.pause("even")
        wait_until(lambda: engine.durable.get("topic_groups:picky", "even").value["paused"], timeout=5)
        t.publish_many([10, 12])
        import time

        time.sleep(0.6)
        assert t.lag("even")["total"] == 2 and sorted(got) == [0, 2, 4, 6, 8]
        t.resume("even")
        wait_until(lambda: sorted(got) == [0, 2, 4, 6, 8, 10, 12], timeout=20)
    assert t.lag("even") == {"partitions": {"0": 0}, "total": 0, "inQueue": 0}


def test_a_delivery_that_keeps_failing_is_dead_lettered_in_its_group_and_retried_from_there(engine: Engine):
    t = engine.topic("flaky")
    state = {"fail": True, "ok": []}

    def handle(ctx):
        if state["fail"]:
            raise RuntimeError("downstream is down")
        state["ok"].append(ctx.message.id)

    t.subscribe("g", start_from="earliest", retries=1, backoff=0.01)(handle)
    t.subscribe("calm", start_from="earliest")(lambda ctx: None)
    mid = t.publish({"n": 1})
    queue = t.group_queue("g")
    with running(engine):
        wait_until(lambda: queue.get_job(mid) is not None and queue.get_job(mid).status == "dead", timeout=20)
        assert [j.id for j in queue.list_jobs(dead=True)[0]] == [mid]
        assert engine.durable.count("queue_dlq:flaky@calm") == 0
        state["fail"] = False
        queue.retry(mid)
        wait_until(lambda: state["ok"] == [mid], timeout=20)
    runs = topic_runs(engine, "g")
    assert sorted(r["status"] for r in runs) == ["completed", "failed", "failed"]


def test_dispatchers_that_all_think_they_hold_the_lock_hand_each_message_over_once(engine: Engine, monkeypatch):
    """A hot-plane flush loses the dispatch lock: two processes may then dispatch one
    group at once. The claimed range in the group record keeps each message one job."""
    from oqronkit.topics.dispatch import Dispatcher
    from oqronkit.topics.subscription import subscriptions_for

    monkeypatch.setattr(engine.hot, "acquire_lock", lambda *args, **kwargs: True)
    t = engine.topic("racy", partitions=2)
    runs: list[str] = []
    lock = threading.Lock()

    def handle(ctx):
        with lock:
            runs.append(ctx.message.id)

    t.subscribe("g", start_from="earliest", concurrency=8)(handle)
    sub = subscriptions_for(engine.registry)["racy@g"]
    add_bulk = sub.queue.add_bulk

    def slow_rivals(items):
        if threading.current_thread().name.startswith("rival"):
            time.sleep(0.2)  # the worker's own dispatcher hands the same range over meanwhile
        return add_bulk(items)

    monkeypatch.setattr(sub.queue, "add_bulk", slow_rivals)
    ids = t.publish_many([{"payload": n, "key": f"k{n}"} for n in range(600)])
    stop = threading.Event()
    extra = [threading.Thread(target=Dispatcher(engine, [sub], f"rival-{n}").loop, args=(stop,), name=f"rival-{n}")
             for n in range(2)]
    for thread in extra:
        thread.start()
    try:
        with running(engine):
            wait_until(lambda: len(runs) >= 600 and t.lag("g")["total"] == 0, timeout=60)
            time.sleep(0.5)
    finally:
        stop.set()
        for thread in extra:
            thread.join(10)
    assert sorted(runs) == sorted(ids)

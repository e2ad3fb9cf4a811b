"""insert_guarded on every durable backend: the guard's key decides, all rows or none."""

from __future__ import annotations

import threading

from oqronkit import DurablePlane
from oqronkit.durable import RecordWrite


def test_a_free_guard_writes_itself_and_every_row(durable: DurablePlane):
    guard = RecordWrite("queue_unique:q", "k", {"jobId": "j1"}, expires_at=5_000)
    assert durable.insert_guarded(guard, [RecordWrite("queue_job:q", "j1", {"status": "waiting"}),
                                          RecordWrite("runs", "r1", {"status": "queued"})])
    stored = durable.get("queue_unique:q", "k")
    assert stored.value == {"jobId": "j1"} and stored.expires_at == 5_000 and stored.record_kind == "state"
    assert durable.get("queue_job:q", "j1").value == {"status": "waiting"}
    assert durable.get("runs", "r1").record_kind == "run"


def test_a_taken_guard_writes_nothing(durable: DurablePlane):
    durable.put("queue_unique:q", "k", {"jobId": "first"})
    durable.put("queue_job:q", "j0", {"v": 0})
    rows = [RecordWrite("queue_job:q", "j2", {"v": 2}), RecordWrite("queue_job:q", "j0", {"v": 9})]
    assert not durable.insert_guarded(RecordWrite("queue_unique:q", "k", {"jobId": "j2"}), rows)
    assert durable.get("queue_unique:q", "k").value == {"jobId": "first"}
    assert durable.get("queue_job:q", "j2") is None
    assert durable.get("queue_job:q", "j0").value == {"v": 0}


def test_rows_are_upserts_and_may_share_the_guards_namespace(durable: DurablePlane):
    durable.put("queue_job:q", "j1", {"v": 1})
    assert durable.insert_guarded(RecordWrite("queue_unique:q", "k", {"n": 1}),
                                  [RecordWrite("queue_unique:q", "k2", {"n": 2}),
                                   RecordWrite("queue_job:q", "j1", {"v": 2})])
    assert durable.get("queue_unique:q", "k2").value == {"n": 2}
    assert durable.get("queue_job:q", "j1").value == {"v": 2}


def test_racing_guards_let_exactly_one_batch_in(durable: DurablePlane):
    barrier, won = threading.Barrier(8), []

    def race(n: int) -> None:
        barrier.wait()
        if durable.insert_guarded(RecordWrite("queue_unique:q", "k", {"n": n}),
                                  [RecordWrite("queue_job:q", f"j{n}", {"n": n})]):
            won.append(n)

    threads = [threading.Thread(target=race, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    assert durable.get("queue_unique:q", "k").value == {"n": won[0]}
    assert durable.count("queue_job:q") == 1


def test_many_rows_over_every_table_go_in_together(durable: DurablePlane):
    rows = [RecordWrite("queue_job:q", f"j{n}", {"n": n}) for n in range(20)]
    rows += [RecordWrite("runs", f"r{n}", {"n": n}) for n in range(5)] + [RecordWrite("cron", "c", {"n": 0})]
    assert durable.insert_guarded(RecordWrite("queue_debounce:q", "k", {"n": -1}, expires_at=1), rows)
    assert (durable.count("queue_job:q"), durable.count("runs"), durable.count("cron")) == (20, 5, 1)
    assert not durable.insert_guarded(RecordWrite("queue_debounce:q", "k", {}), [RecordWrite("cron", "d", {})])
    assert durable.get("cron", "d") is None

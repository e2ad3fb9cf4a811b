"""The outcomes' way from the handler slots to the finisher (worker/outbox.py): nothing put
is ever lost, order is kept per producer, and a sleeping taker wakes on a put."""

from __future__ import annotations

import threading
import time

from oqronkit.worker.outbox import Outbox


def test_take_returns_oldest_first_up_to_most() -> None:
    box: Outbox[int] = Outbox()
    for i in range(5):
        box.put(i)
    assert box.take(3, timeout=0) == [0, 1, 2]
    assert box.take(3, timeout=0) == [3, 4]
    assert box.empty()
    assert box.take(3, timeout=0.01) == []


def test_a_sleeping_taker_wakes_on_a_put_long_before_its_timeout() -> None:
    box: Outbox[str] = Outbox()
    got: list[list[str]] = []
    started = time.monotonic()
    taker = threading.Thread(target=lambda: got.append(box.take(10, timeout=5.0)))
    taker.start()
    time.sleep(0.05)  # the taker is asleep by now
    box.put("done")
    taker.join(5)
    assert got == [["done"]]
    assert time.monotonic() - started < 2.0


def test_many_producers_one_taker_lose_nothing_and_keep_each_producers_order() -> None:
    box: Outbox[tuple[int, int]] = Outbox()
    producers, each = 4, 5000
    taken: list[tuple[int, int]] = []

    def produce(p: int) -> None:
        for i in range(each):
            box.put((p, i))
            if i % 500 == 0:
                time.sleep(0.001)  # let the taker fall asleep now and then

    threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(taken) < producers * each and time.monotonic() < deadline:
        taken.extend(box.take(100, timeout=0.05))
    for t in threads:
        t.join()
    assert len(taken) == producers * each
    for p in range(producers):
        assert [i for q, i in taken if q == p] == list(range(each))

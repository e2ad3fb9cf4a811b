"""Producers for the uniqueness tests: threads adding with one unique key, in this
process or in spawned ones (each with its own engine on the same backends)."""

from __future__ import annotations

import multiprocessing
import threading
import time
from typing import Any

from oqronkit import Engine, OqronConfig, Registry


def add_in_threads(engine: Engine, queue: str, threads: int, barrier: Any, window: float, pause: float,
                   offset: int = 0) -> list[tuple[int, str, str]]:
    """Each thread adds twice with key "k" (payloads differ): once right after the
    barrier, and once more after ``pause`` (past the window); (thread, first id, second id)."""
    q = engine.queue(queue)
    q.counts()  # connect first: the adds after the barrier must all land inside the window
    out: list[tuple[int, str, str]] = []

    def produce(n: int) -> None:
        barrier.wait()
        first = q.add({"n": n}, unique_for=window, unique_key="k").id
        barrier.wait()
        time.sleep(pause)
        barrier.wait()
        out.append((n, first, q.add({"n": n, "again": True}, unique_for=window, unique_key="k").id))

    workers = [threading.Thread(target=produce, args=(offset + i,)) for i in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return out


def debounce_in_threads(engine: Engine, queue: str, threads: int, barrier: Any, window: float, pause: float,
                        offset: int = 0) -> list[tuple[int, str, str]]:
    """Each thread adds once with ``debounce=window`` and key "d" right after the
    barrier; (thread, job id, the payload's thread number as text)."""
    q = engine.queue(queue)
    q.counts()
    out: list[tuple[int, str, str]] = []

    def produce(n: int) -> None:
        barrier.wait()
        job = q.add({"n": n}, debounce=window, unique_key="d")
        out.append((n, job.id, str(job.data["n"])))

    workers = [threading.Thread(target=produce, args=(offset + i,)) for i in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return out


PRODUCERS = {"unique": add_in_threads, "debounce": debounce_in_threads}


def _child(kind: str, config: OqronConfig, queue: str, threads: int, barrier: Any, window: float, pause: float,
           offset: int, results: Any) -> None:
    engine = Engine(config, registry=Registry())
    try:
        results.put(PRODUCERS[kind](engine, queue, threads, barrier, window, pause, offset))
    finally:
        engine.close()


def add_in_processes(config: OqronConfig, queue: str, *, processes: int, threads: int, window: float,
                     pause: float, kind: str = "unique") -> list[tuple[int, str, str]]:
    """``processes`` spawned processes of ``threads`` producers each, started together."""
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(processes * threads), ctx.Queue()
    children = [ctx.Process(target=_child,
                            args=(kind, config, queue, threads, barrier, window, pause, p * threads, results))
                for p in range(processes)]
    for child in children:
        child.start()
    out = [row for _ in children for row in results.get(timeout=60)]
    for child in children:
        child.join(timeout=30)
        assert child.exitcode == 0
    return out

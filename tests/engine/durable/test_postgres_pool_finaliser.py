"""A pool nobody closed must not block the thread that finalises it (the garbage
collector runs finalisers on whatever thread allocates, mid-way through other work)."""

from __future__ import annotations

import threading
import time

from oqronkit.backends.postgres.pool import LazyPool
from tests.services import require_postgres


class _BlockingTask:
    """A maintenance task that holds its worker thread until released."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def run(self) -> None:
        self.started.set()
        self.release.wait(30)


def test_finalising_an_unclosed_pool_does_not_wait_for_its_threads() -> None:
    lazy = LazyPool(require_postgres(), "finaliser-test", label="store", min_size=1, max_size=1, timeout=5)
    pool = lazy._open()
    workers = list(pool._workers)
    task = _BlockingTask()
    pool.run_task(task)  # type: ignore[arg-type]
    assert task.started.wait(5)
    try:
        started = time.monotonic()
        pool.__del__()
        assert time.monotonic() - started < 1.0  # psycopg's own finaliser waits 5 s per busy thread
    finally:
        task.release.set()
    for worker in workers:
        worker.join(5)
        assert not worker.is_alive()  # told to stop, they do once free
    lazy.close()

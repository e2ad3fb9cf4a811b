"""Supervision of the worker's threads: an exception that escapes a thread's loop is
logged with its traceback and the loop starts again; a loop that keeps failing stops
the process with a non-zero exit status, so that its own supervisor restarts it."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)
#: Restarts of one thread within RESTART_WINDOW seconds before the process gives up.
MAX_RESTARTS = 5
RESTART_WINDOW = 60.0


class Supervisor:
    """Starts daemon threads whose target is restarted after an unexpected exception.
    ``on_fatal(reason)`` is called once a thread fails more than :data:`MAX_RESTARTS`
    times within :data:`RESTART_WINDOW` seconds (the thread then ends)."""

    def __init__(self, *, on_fatal: Callable[[str], None]) -> None:
        self._on_fatal = on_fatal
        self.threads: list[threading.Thread] = []
        self.failures = 0  # every failure of every thread (tests and the stop summary read it)

    def spawn(self, name: str, target: Callable[..., Any], *args: Any) -> threading.Thread:
        thread = threading.Thread(target=self._run, args=(name, target, args), name=name, daemon=True)
        thread.start()
        self.threads.append(thread)
        return thread

    def _run(self, name: str, target: Callable[..., Any], args: tuple[Any, ...]) -> None:
        recent: deque[float] = deque()
        while True:
            try:
                target(*args)
                return
            except BaseException as exc:  # whatever escapes a loop: SystemExit from a handler's thread too
                self.failures += 1
                now = time.monotonic()
                recent.append(now)
                while recent and now - recent[0] > RESTART_WINDOW:
                    recent.popleft()
                if len(recent) > MAX_RESTARTS:
                    logger.critical("worker thread %s failed %d times within %.0f s; stopping the worker",
                                    name, len(recent), RESTART_WINDOW, exc_info=exc,
                                    extra={"action": "worker.thread_fatal"})
                    self._on_fatal(f"thread {name} kept failing: {type(exc).__name__}")
                    return
                logger.critical("worker thread %s failed; restarting it", name, exc_info=exc,
                                extra={"action": "worker.thread_failed"})
            time.sleep(min(0.05 * 2 ** len(recent), 2.0))

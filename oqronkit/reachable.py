"""Waiting out a backend's restart when a long-running process starts."""

from __future__ import annotations

import time
from collections.abc import Callable

from .errors import BackendUnavailable


def until_reachable[T](budget_s: float, step: Callable[[], T]) -> T:
    """``step`` retried while its backend is unreachable, for up to ``budget_s`` in all
    (``backend_wait``). A refused connection fails at once, unlike a hung one, so a
    worker starting while Redis or Postgres restarts would exit where a moment's wait
    sees it through. Interactive callers (the board, the CLI) keep failing fast."""
    deadline, pause = time.monotonic() + budget_s, 0.05
    while True:
        try:
            return step()
        except BackendUnavailable:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise
            time.sleep(min(pause, remaining))  # the last try falls on the deadline
            pause = min(pause * 2, 1.0)

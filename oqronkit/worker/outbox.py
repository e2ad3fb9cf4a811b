"""Outcomes on their way from the handler slots to the finisher thread.

A deque (append and popleft are atomic) and an event the producers set only while the
finisher sleeps: a ``put`` is one append and one attribute read, where a
``queue.Queue`` takes a lock and notifies a condition for every outcome.
"""

from __future__ import annotations

import threading
from collections import deque


class Outbox[T]:
    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._wake = threading.Event()
        self._sleeping = False

    def put(self, item: T) -> None:
        self._items.append(item)
        if self._sleeping:
            self._wake.set()

    def take(self, most: int, timeout: float) -> list[T]:
        """Up to ``most`` items, oldest first; waits up to ``timeout`` s for the first."""
        items = self._items
        if not items:
            self._sleeping = True
            # Looked at again after saying so: a put in between saw no sleeper and set nothing.
            if not items:
                self._wake.wait(timeout)
            self._sleeping = False
            self._wake.clear()  # an item put after this stays in the deque: never lost
        batch: list[T] = []
        while items and len(batch) < most:
            batch.append(items.popleft())
        return batch

    def empty(self) -> bool:
        return not self._items

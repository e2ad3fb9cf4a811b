"""A cron or schedule run executing on the leader: what its executor and its context share."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ..queues.runs import RunValue
from .definition import Definition


@dataclass(eq=False)
class RunningRun:
    definition: Definition
    run: RunValue
    deadline: int | None
    cancelled: threading.Event = field(default_factory=threading.Event)
    cancel_reason: str | None = None
    settled: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def key(self) -> tuple[str, str]:
        return self.definition.key

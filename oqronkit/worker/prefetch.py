"""How many jobs a queue claims ahead of its free slots.

Claiming in batches is what makes fast jobs cheap: one claim and one durable read feed
many starts, and bigger settle batches follow. Slow jobs gain nothing from it and
holding them only keeps them from other workers, so unless the queue fixes a number,
the prefetch follows the observed handler time: enough held jobs to cover ``WINDOW``
of work per slot, between 1 and ``MAX_PER_SLOT`` per slot.
"""

from __future__ import annotations

WINDOW = 0.05  # seconds of handler time per slot to keep in hand
# Fast jobs need the cap to cover what the slots run while a claim is in flight (figures: bench/README.md).
MAX_PER_SLOT = 60
START_PER_SLOT = 2  # before any job of the queue has finished here
SMOOTHING = 0.05


class Prefetch:
    def __init__(self, *, concurrency: int, fixed: int | None) -> None:
        self.concurrency = concurrency
        self.fixed = fixed
        self.seconds_per_job: float | None = None
        # Read several times per job, so kept up to date by observe() rather than computed.
        self.size = fixed if fixed is not None else START_PER_SLOT * concurrency

    def observe(self, seconds: float) -> None:
        """One handler's run time (a moving average; races between slots are harmless)."""
        avg = self.seconds_per_job
        self.seconds_per_job = avg = seconds if avg is None else avg + SMOOTHING * (seconds - avg)
        if self.fixed is None:
            ahead = round(self.concurrency * WINDOW / max(avg, 1e-5))
            self.size = max(1, min(ahead, MAX_PER_SLOT * self.concurrency))

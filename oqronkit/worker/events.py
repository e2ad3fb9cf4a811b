"""Which lifecycle events a settled attempt fires, once its outcome is stored: a failed
attempt fires ``failed`` then ``retried`` (given back) or ``dead`` (dead-lettered); a
cancelled one, or one its ``condition`` skipped, fires ``cancelled`` alone."""

from __future__ import annotations

from .inflight import Outcome
from .state import WorkerState


def fire_retried(state: WorkerState, outcome: Outcome, reason: str) -> None:
    state.hook(outcome.inflight, "failed", error=outcome.error, reason=reason)
    state.hook(outcome.inflight, "retried", error=outcome.error, reason=reason)


def fire_buried(state: WorkerState, outcome: Outcome, reason: str) -> None:
    if outcome.kind in ("cancelled", "skipped"):
        state.hook(outcome.inflight, "cancelled", output=outcome.output, reason=reason)
        return
    state.hook(outcome.inflight, "failed", error=outcome.error, reason=reason)
    state.hook(outcome.inflight, "dead", error=outcome.error, reason=reason)

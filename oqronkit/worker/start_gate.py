"""The start gate of a rate-limited queue (``queue(..., rate_limit=(n, seconds))``): the
limit holds on handler starts, not only on claims.

A run starts some milliseconds after its claim (the durable read, the hand-off to a
slot), and by a varying amount, so starts spaced by their claims alone bunch: a window
of ``seconds`` could see more than ``n`` of them. So, right before the handlers start,
one hot-plane step (``HotPlane.start_limited``) logs their starts in the queue's rate
log and gives the time the runs' ``startedAt`` take. Each start moves its claim's entry,
so a start within the window of its claim always goes through at once. One later than
that (a durable plane slow for longer than the window) may find the window full: it
waits in its slot until the log frees room. Meanwhile the job keeps its lease (the
heartbeat renews every lease this process holds), no run is opened and no attempt is
counted; at a stop it goes back to its queue uncounted, as a job claimed ahead would.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..clock import now_ms
from ..errors import OqronError
from .inflight import Inflight

if TYPE_CHECKING:
    from .state import WorkerState

logger = logging.getLogger(__name__)
#: Longest single wait (s): a stop, a lost lease or a cancel request is seen this soon.
SLICE = 0.25
#: Wait after a hot-plane error before asking again (s).
OUTAGE_WAIT = 1.0


def gated_rate(inflights: list[Inflight]) -> tuple[int, int] | None:
    """The rate ``(n, window_ms)`` the starts of ``inflights`` (one queue's) pass, if any."""
    limits = inflights[0].queue.limits if inflights else None
    return None if limits is None else limits.rate


def admit(state: WorkerState, inflights: list[Inflight], rate: tuple[int, int]) -> int | None:
    """Wait until the queue's rate lets ``inflights`` (at most ``rate[0]``, given their
    slots) start; the time their starts were logged at, which their runs start at. The
    ones settled (a lost lease) or cancelled meanwhile are not logged: none of their
    handlers will run. None when the worker stops first (the caller gives them back)."""
    queue = inflights[0].queue.name
    outage = False
    while True:
        live = [i for i in inflights if not i.settled and not i.cancelled]
        if not live:
            return now_ms()
        if state.stopping.is_set():
            return None
        now = now_ms()
        try:
            got = state.hot.start_limited(queue, tokens=[i.lease.token for i in live], now=now, rate=rate)
        except OqronError as exc:
            if not outage:  # once per wait: the claim loop reports the outage as well
                logger.warning("could not pass the start gate of %s; retrying: %s", queue, exc,
                               extra={"action": "worker.start_gate_failed"})
            outage = True
            state.stopping.wait(OUTAGE_WAIT)
            continue
        if got.at is not None:
            return got.at
        state.count("start_held")
        retry_at = got.retry_at if got.retry_at is not None else now + 1
        _wait_until(state, live, retry_at)


def _wait_until(state: WorkerState, live: list[Inflight], retry_at: int) -> None:
    """Sleep until ``retry_at`` (epoch ms) in slices, ending early on a stop, a lost lease
    or a cancel request."""
    while (left := (retry_at - now_ms()) / 1000) > 0:
        if state.stopping.wait(min(left, SLICE)):
            return
        if any(i.settled or i.cancelled for i in live):
            return

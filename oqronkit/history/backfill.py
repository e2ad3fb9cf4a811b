"""Synthetic history for demos: minute buckets for the last day, hour buckets for the
last ``days`` days and their day buckets, every one marked ``"synthetic": true`` (the
board labels a chart that shows any). Never called by the engine itself."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Final

from ..clock import now_ms
from ..durable import DurablePlane
from .buckets import ALL_KEY, DAY_MS, HOUR_MS, MINUTE_MS, Bucket, Resolution, floor_to
from .rollup import FIRST_LOOKBACK_MS
from .writes import Retention, write_buckets

SYNTHETIC: Final = "synthetic"


def backfill_synthetic(durable: DurablePlane, handlers: Sequence[str], *, days: int = 3, per_minute: int = 20,
                       now: int | None = None, seed: int = 37) -> int:
    """Write synthetic buckets for each of ``handlers`` (as queues and handlers) and for
    every run, up to the last closed minute; returns the buckets written. Real rollups
    replace any synthetic bucket of a minute, hour or day they roll."""
    rng = random.Random(seed)
    at = now_ms() if now is None else now
    retention = Retention()
    end = floor_to(at, "minute") - FIRST_LOOKBACK_MS - 2 * MINUTE_MS  # the leader's first pass rolls from there
    written = 0
    plan: list[tuple[Resolution, int, int]] = [("minute", MINUTE_MS, max(end - DAY_MS, 0)),
                                              ("hour", HOUR_MS, floor_to(end - days * DAY_MS, "hour")),
                                              ("day", DAY_MS, floor_to(end - days * DAY_MS, "day"))]
    for resolution, step, first in plan:
        for start in range(first, floor_to(end, resolution), step):
            buckets = _synthetic(rng, handlers, start, step // MINUTE_MS * per_minute)
            write_buckets(durable, resolution, start, buckets, retention, synthetic=True)
            written += len(buckets)
    return written


def _synthetic(rng: random.Random, handlers: Sequence[str], start: int, expected: int) -> list[Bucket]:
    """A daily wave of traffic, one failure in 25, durations log-normal per handler."""
    wave = 1 + 0.6 * math.sin(2 * math.pi * (start % DAY_MS) / DAY_MS)
    total = Bucket("all", ALL_KEY, start)
    out: list[Bucket] = []
    for index, name in enumerate(handlers):
        runs = max(int(rng.gauss(expected * wave, math.sqrt(expected) + 1) / len(handlers)), 0)
        bucket = Bucket("handler", name, start)
        for _ in range(min(runs, 400)):  # a sample shapes the sketches; the counts stay exact below
            failed = rng.random() < 0.04
            bucket.add_run("failed" if failed else "completed", 2 if rng.random() < 0.05 else 1,
                           rng.lognormvariate(3 + index, 0.6), rng.lognormvariate(2, 1))
        if runs > 400:
            scale = runs / 400
            bucket.outcomes = {k: round(v * scale) for k, v in bucket.outcomes.items()}
            bucket.retries = round(bucket.retries * scale)
        queue = Bucket("queue", name, start)
        queue.merge(bucket)
        total.merge(bucket)
        out += [bucket, queue]
    return [*out, total]

"""The demo's synthetic history: labelled as such, and clear of the minutes the real rollups start on."""

from __future__ import annotations

from oqronkit import DurablePlane
from oqronkit.backends.memory import MemoryDurableStore
from oqronkit.history.backfill import backfill_synthetic
from oqronkit.history.read import metrics_history
from oqronkit.history.rollup import FIRST_LOOKBACK_MS


def test_synthetic_backfill_is_labelled_and_leaves_the_real_rollups_room():
    durable = DurablePlane(MemoryDurableStore(), project="p", environment="e")
    durable.start()
    now = 1_800_000_000_000
    assert backfill_synthetic(durable, ["emails", "reports"], days=2, per_minute=10, now=now) > 0
    day = metrics_history(durable, "queue", "emails", "24h", now=now)
    assert day.synthetic and sum(p.runs for p in day.points) > 1000
    assert not any(p.runs for p in day.points if p.start >= now - FIRST_LOOKBACK_MS)  # the real rollups' minutes
    week = metrics_history(durable, "all", "*", "7d", now=now)
    assert week.synthetic and week.points[-30].runs > 0 and week.points[-30].duration["p99"] is not None
    assert not metrics_history(durable, "queue", "nothing", "24h", now=now).synthetic

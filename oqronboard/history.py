"""The metrics history panel (issue 37, item 4): charts of one queue, handler or topic
group (or every run) over a chosen range, read through ``Engine.metrics_history``
(the leader's rollups, never the runs themselves): throughput by outcome, duration and
wait quantiles, and deploy markers."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django import forms

from oqronkit.errors import OqronError
from oqronkit.history.read import RANGES, History

from .base.filters import clean_or_400
from .base.scope import BoardScope
from .charts import Chart, LineChart, compact_bars, line_chart, stacked_bars

logger = logging.getLogger(__name__)
DEFAULT_SPAN = "24h"
#: The overview's: its "Last hour" panel shows the last hour already, and a week reads 168 buckets.
OVERVIEW_SPAN = "7d"
#: Charts of more buckets draw their bars as paths, without a tooltip per bar.
COMPACT_ABOVE = 120
SPAN_LABELS = {"1h": "the last hour", "24h": "the last 24 hours", "7d": "the last 7 days",
               "30d": "the last 30 days", "90d": "the last 90 days", "1y": "the last year"}


class HistoryForm(forms.Form):
    range = forms.ChoiceField(choices=[(s, s) for s in RANGES], required=False, label="Range")


def span_of(params: Any, default: str = DEFAULT_SPAN) -> str:
    """The range a page's query asks for (``default`` when none); BadFilter (a 400) otherwise."""
    return clean_or_400(HistoryForm(params))["range"] or default


@dataclass
class HistoryPanel:
    scope: str
    key: str
    span: str
    spans: list[str] = field(default_factory=lambda: list(RANGES))
    history: History | None = None
    throughput: Chart | None = None
    durations: LineChart | None = None
    waits: LineChart | None = None
    totals: dict[str, int] = field(default_factory=dict)
    problem: str | None = None


def history_panel(scope: BoardScope, kind: str, key: str, span: str) -> HistoryPanel:
    """The panel's charts, or the reason the history could not be read."""
    panel = HistoryPanel(kind, key, span)
    try:
        history = scope.engine.metrics_history(kind, key, span)
    except OqronError as exc:
        logger.warning("metrics history: %s", exc, extra={"action": "board.history_failed"})
        panel.problem = str(exc)
        return panel
    panel.history, panel.totals = history, history.totals()
    period = SPAN_LABELS[span]
    pairs = [(p.outcomes.get("completed", 0), p.runs - p.outcomes.get("completed", 0)) for p in history.points]
    if len(pairs) > COMPACT_ABOVE:
        total_ok = sum(ok for ok, _ in pairs)
        panel.throughput = compact_bars(pairs, width=720, height=90, label=(
            f"{total_ok} completed and {sum(bad for _, bad in pairs)} other outcomes over {period}"))
    else:
        labels = [f"{history.resolution} from {_utc(p.start)}" for p in history.points]
        panel.throughput = stacked_bars(pairs, labels=labels, width=720, height=90, gap=1, period=period)
    step = (history.end - history.start) / max(len(history.points), 1)
    markers = [(int((d.at - history.start) // step), f"deploy {d.version} at {_utc(d.at)}")
               for d in history.deploys if history.start <= d.at < history.end]
    for name, attribute in (("durations", "duration"), ("waits", "wait")):
        series = {q: [getattr(p, attribute)[q] for p in history.points] for q in ("p50", "p95", "p99")}
        setattr(panel, name, line_chart(series, width=720, height=90, markers=markers,
                                        label=f"{attribute} p50, p95 and p99 over {period}"))
    return panel


def _utc(ms: int) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ms / 1000))

"""Small server-rendered SVG charts: geometry only; templates draw the ``<rect>``s.

No chart library and no inline style (the CSP forbids it): bars carry a CSS class and
SVG presentation attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    label: str


def stacked_bars(
    buckets: list[tuple[int, int]], *, labels: list[str], width: int = 132, height: int = 32, gap: float = 1.0,
    period: str = "the last hour",
) -> Chart:
    """One stacked bar per bucket: completed (``ok``) under failed (``bad``).

    ``buckets`` are ``(completed, failed)`` pairs, oldest first; ``labels`` name each
    bucket for its tooltip. Heights share one scale, the tallest bucket's total.
    """
    count = max(len(buckets), 1)
    peak = max((ok + bad for ok, bad in buckets), default=0) or 1
    slot = width / count
    bars: list[Bar] = []
    for index, ((ok, bad), label) in enumerate(zip(buckets, labels, strict=True)):
        x = round(index * slot + gap / 2, 2)
        bar_width = round(max(slot - gap, 0.5), 2)
        ok_height = round(ok / peak * height, 2)
        bad_height = round(bad / peak * height, 2)
        if ok:
            bars.append(Bar(x, round(height - ok_height, 2), bar_width, ok_height, "ok",
                            f"{label}: {ok} completed"))
        if bad:
            bars.append(Bar(x, round(height - ok_height - bad_height, 2), bar_width, bad_height, "bad",
                            f"{label}: {bad} failed"))
    total_ok = sum(ok for ok, _ in buckets)
    total_bad = sum(bad for _, bad in buckets)
    return Chart(width, height, bars, f"{total_ok} completed and {total_bad} failed over {period}")


@dataclass(frozen=True)
class Line:
    css: str
    points: str  # an SVG polyline's points: "x,y x,y ..."; a gap in the data starts a new line
    title: str


@dataclass(frozen=True)
class Marker:
    x: float
    title: str


@dataclass(frozen=True)
class LineChart:
    width: int
    height: int
    lines: list[Line]
    markers: list[Marker]
    peak: float
    label: str


def line_chart(series: dict[str, list[float | None]], *, width: int = 480, height: int = 80,
               markers: Sequence[tuple[int, str]] = (), label: str = "") -> LineChart:
    """One polyline per series (its name is the CSS class), a point per bucket, oldest
    first, on one scale (the highest value); None values break the line. ``markers``
    are (bucket index, title) pairs drawn as vertical lines (deploys)."""
    count = max((len(values) for values in series.values()), default=0)
    peak = max((v for values in series.values() for v in values if v is not None), default=0.0) or 1.0
    slot = width / max(count, 1)
    lines: list[Line] = []
    for name, values in series.items():
        run: list[str] = []
        for index, value in enumerate([*values, None]):
            if value is None:
                if run:
                    lines.append(Line(name, " ".join(run if len(run) > 1 else run * 2), name))
                run = []
                continue
            x = round(index * slot + slot / 2, 2)
            run.append(f"{x},{round(height - value / peak * (height - 2) - 1, 2)}")
    drawn = [Marker(round(index * slot + slot / 2, 2), title) for index, title in markers]
    return LineChart(width, height, lines, drawn, peak, label)

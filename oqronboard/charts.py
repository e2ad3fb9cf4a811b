"""Small server-rendered SVG charts: geometry only; templates draw the ``<rect>``s.

No chart library and no inline style (the CSP forbids it): bars carry a CSS class and
SVG presentation attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape  # the stdlib's: Django's lazy-aware wrapper costs ~10 us a call

from django.utils.safestring import SafeString, mark_safe


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


@dataclass(frozen=True)
class Path:
    css: str
    d: str  # an SVG path: one "M x y h w v h h -w z" rectangle per bar


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    label: str
    paths: list[Path] = field(default_factory=list)
    view_width: int | None = None  # the viewBox's width when it is not the drawn width

    @property
    def svg(self) -> SafeString:
        """The chart's markup (``_chart.html`` prints it). Built here, not in a template
        loop: the overview draws a chart per queue, and the template engine's number
        localisation of every coordinate was a third of the page's time."""
        label = escape(self.label)
        view_height = VIEW_HEIGHT if self.view_width else self.height
        axis = ("" if self.view_width else
                f'<line class="axis" x1="0" y1="{self.height}" x2="{self.width}" y2="{self.height}"></line>')
        rects = "".join(f'<rect class="{escape(b.css)}" x="{b.x}" y="{b.y}" width="{b.width}" height="{b.height}">'
                        f"<title>{escape(b.title)}</title></rect>" for b in self.bars)
        paths = "".join(f'<path class="{escape(p.css)}" d="{escape(p.d)}"></path>' for p in self.paths)
        return mark_safe(  # every text above went through escape(); the rest are numbers
            f'<svg class="chart" viewBox="0 0 {self.view_width or self.width} {view_height}" width="{self.width}" '
            f'height="{self.height}" role="img" aria-label="{label}" preserveAspectRatio="none">\n'
            f"  <title>{label}</title>\n  {axis}\n  {rects}{paths}\n</svg>")


#: The viewBox height of the compact charts: integer coordinates, no rounding per point.
VIEW_HEIGHT = 100


def compact_bars(buckets: list[tuple[int, int]], *, width: int, height: int, label: str) -> Chart:
    """Like :func:`stacked_bars` for hundreds of buckets: one bucket per viewBox unit and
    the bars as one path per class, without a tooltip each (a 1,440-bar chart as <rect>s
    with titles weighed 400 KB and took 30 ms to build)."""
    peak = max((ok + bad for ok, bad in buckets), default=0) or 1
    ok_parts, bad_parts = [], []
    for index, (ok, bad) in enumerate(buckets):
        ok_height = ok * VIEW_HEIGHT // peak
        if ok_height:
            ok_parts.append(f"M{index} {VIEW_HEIGHT - ok_height}h1v{ok_height}h-1z")
        bad_height = bad * VIEW_HEIGHT // peak or (1 if bad else 0)
        if bad_height:
            bad_parts.append(f"M{index} {VIEW_HEIGHT - ok_height - bad_height}h1v{bad_height}h-1z")
    return Chart(width, height, [], label, [Path("ok", "".join(ok_parts)), Path("bad", "".join(bad_parts))],
                 view_width=len(buckets))



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
    view_width: int = 0
    view_height: int = VIEW_HEIGHT


def line_chart(series: dict[str, list[float | None]], *, width: int = 480, height: int = 80,
               markers: Sequence[tuple[int, str]] = (), label: str = "") -> LineChart:
    """One polyline per series (its name is the CSS class), a point per bucket, oldest
    first, on one scale (the highest value); None values break the line. ``markers``
    are (bucket index, title) pairs drawn as vertical lines (deploys). The viewBox has
    one unit per bucket and VIEW_HEIGHT units of height: integer coordinates."""
    count = max((len(values) for values in series.values()), default=0)
    peak = max((v for values in series.values() for v in values if v is not None), default=0.0) or 1.0
    scale = (VIEW_HEIGHT - 2) / peak
    lines: list[Line] = []
    for name, values in series.items():
        run: list[str] = []
        for index, value in enumerate([*values, None]):
            if value is None:
                if run:
                    lines.append(Line(name, " ".join(run if len(run) > 1 else run * 2), name))
                run = []
                continue
            run.append(f"{index}.5,{VIEW_HEIGHT - 1 - int(value * scale)}")
    drawn = [Marker(index + 0.5, title) for index, title in markers]
    return LineChart(width, height, lines, drawn, peak, label, view_width=max(count, 1))

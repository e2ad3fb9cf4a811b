"""Small server-rendered SVG charts: geometry only; templates draw the ``<rect>``s.

No chart library and no inline style (the CSP forbids it): bars carry a CSS class and
SVG presentation attributes.
"""

from __future__ import annotations

from dataclasses import dataclass
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
class Chart:
    width: int
    height: int
    bars: list[Bar]
    label: str

    @property
    def svg(self) -> SafeString:
        """The chart's markup (``_chart.html`` prints it). Built here, not in a template
        loop: the overview draws a chart per queue, and the template engine's number
        localisation of every coordinate was a third of the page's time."""
        label = escape(self.label)
        rects = "".join(f'<rect class="{escape(b.css)}" x="{b.x}" y="{b.y}" width="{b.width}" height="{b.height}">'
                        f"<title>{escape(b.title)}</title></rect>" for b in self.bars)
        return mark_safe(  # every text above went through escape(); the rest are numbers
            f'<svg class="chart" viewBox="0 0 {self.width} {self.height}" width="{self.width}" '
            f'height="{self.height}" role="img" aria-label="{label}" preserveAspectRatio="none">\n'
            f"  <title>{label}</title>\n"
            f'  <line class="axis" x1="0" y1="{self.height}" x2="{self.width}" y2="{self.height}"></line>\n'
            f"  {rects}\n</svg>")


def stacked_bars(
    buckets: list[tuple[int, int]], *, labels: list[str], width: int = 132, height: int = 32, gap: float = 1.0
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
    return Chart(width, height, bars, f"{total_ok} completed and {total_bad} failed over the last hour")

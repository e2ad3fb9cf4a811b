"""Issue 37 item 6 (every page under 50 ms at scale): what was changed for speed shows
what it showed before. The timing itself is bench/board_pages.py's."""

from __future__ import annotations

import re

from django.template import Context, Template

from oqronboard.charts import stacked_bars

# _chart.html as it was, a template loop (the chart's markup now comes from Chart.svg).
CHART_TEMPLATE = """<svg class="chart" viewBox="0 0 {{ chart.width }} {{ chart.height }}" width="{{ chart.width }}" \
height="{{ chart.height }}" role="img" aria-label="{{ chart.label }}" preserveAspectRatio="none">
  <title>{{ chart.label }}</title>
  <line class="axis" x1="0" y1="{{ chart.height }}" x2="{{ chart.width }}" y2="{{ chart.height }}"></line>
  {% for bar in chart.bars %}<rect class="{{ bar.css }}" x="{{ bar.x }}" y="{{ bar.y }}" width="{{ bar.width }}" \
height="{{ bar.height }}"><title>{{ bar.title }}</title></rect>{% endfor %}
</svg>"""


def test_a_chart_draws_the_markup_the_template_loop_drew():
    buckets = [(0, 0), (3, 1), (12, 0), (7, 7), (1, 0), (0, 2)]
    labels = [f'bucket <{i}> "& more"' for i in range(len(buckets))]
    for chart in (stacked_bars(buckets, labels=labels), stacked_bars(buckets, labels=labels, width=480, height=80,
                                                                     gap=2), stacked_bars([(0, 0)], labels=["x"])):
        before = Template(CHART_TEMPLATE).render(Context({"chart": chart}))
        assert _squash(chart.svg) == _squash(before)
        assert "<rect" in before or not chart.bars


def _squash(html: str) -> str:
    return re.sub(r"\s+", " ", html).replace("&#x27;", "&#39;").strip()

"""The metrics history on a queue's page in a real browser (issue 37, item 4): runs
rolled up through the engine's API show in the charts; switching the range to 7 days
reads hour buckets, back to an hour minute buckets; the handler page is one click away."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.harness import LiveBoard, manage

pytestmark = [pytest.mark.browser, pytest.mark.slow]

QUEUE = "browser-history"


def test_queue_page_chart_and_range_switch(operator_page: Any, board: LiveBoard) -> None:
    manage(board.env, "shell", "-c", f"from tests.browser.prepare import history; history({QUEUE!r}, 20)")
    page = operator_page
    page.goto(f"/jobs/{QUEUE}/")
    panel = page.locator('[data-testid="history"]')
    assert panel.get_attribute("data-range") == "24h"
    assert "1440 minute buckets: 20 completed" in " ".join(page.locator('[data-testid="history-totals"]')
                                                           .inner_text().split())
    bars = panel.locator("svg.chart path.ok").get_attribute("d") or ""
    assert bars.count("M") == 20  # 1,440 buckets: one path of bars, one rectangle per busy minute
    assert panel.locator("svg.chart polyline.p99").count() >= 1
    with page.expect_navigation():
        page.click('[data-testid="range-7d"]')
    assert "range=7d" in page.url and panel.get_attribute("data-range") == "7d"
    assert page.locator('[data-testid="range-7d"]').get_attribute("aria-current") == "page"
    assert page.locator('[data-testid="history-totals"]').inner_text().startswith("168 hour buckets")
    with page.expect_navigation():
        page.click('[data-testid="range-1h"]')
    assert " ".join(page.locator('[data-testid="history-totals"]').inner_text().split()).startswith(
        "60 minute buckets: 20 completed")
    with page.expect_navigation():
        page.click('[data-testid="handler-link"]')
    assert page.url.endswith(f"/handlers/{QUEUE}/")
    assert "20 completed" in page.locator('[data-testid="history-totals"]').inner_text()
    assert not page.errors

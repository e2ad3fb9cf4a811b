"""Replays in a real browser (issue 37 item 2): an operator replays a handler's last runs
from the Replays page and watches the set's summary arrive live; after a "deploy" (the
price list changes) a replay of the runs a runs-page filter shows lists every pair as
changed, with the diff's path; and the same replay as a tracked operation; and the runs
page's "Replay every match"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.harness import LiveBoard, manage, wait_for
from tests.browser.test_board import by_testid, open_nav

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LIVE_TIMEOUT_MS = 40_000
QUOTES = 4


def seed() -> None:
    """Run in the board's process environment (``manage shell``)."""
    from oqronkit.contrib.django import engine

    engine.get_engine()
    from tests.browser.workload.oqron import quotes

    quotes.add_bulk([{"qty": n} for n in range(1, QUOTES + 1)])


def completed_quotes(board: LiveBoard) -> int:
    plane = board.durable()
    try:
        page = plane.list("runs", name="quotes", status="completed", limit=100)
        return sum(1 for r in page.records if not r.value.get("replayOf"))
    finally:
        plane.close()


def test_replay_the_last_runs_then_a_filter_after_a_deploy(operator_page: Any, board: LiveBoard):
    price_file = Path(board.env["BROWSER_FLAKY_DIR"]) / "unit-price"
    price_file.parent.mkdir(parents=True, exist_ok=True)
    price_file.unlink(missing_ok=True)
    manage(board.env, "shell", "-c", "from tests.browser.test_replays import seed; seed()")
    wait_for(lambda: completed_quotes(board) >= QUOTES, timeout=60, what="the quotes completed", board=board)
    page = operator_page
    page.goto("/")
    open_nav(page, "replays")
    page.fill('[data-testid="replay-handler"]', "quotes")
    page.fill('[data-testid="replay-last"]', str(QUOTES))
    by_testid(page, "replay-submit").click()
    summary = by_testid(page, "replay-summary")
    summary.filter(has_text=f"{QUOTES} identical, 0 changed, 0 failed").wait_for(timeout=LIVE_TIMEOUT_MS)
    assert by_testid(page, "replay-verdict").inner_text() == "all identical"
    price_file.write_text("260")  # the deploy: every quote now answers differently
    page.goto("/runs/?name=quotes&status=completed")
    by_testid(page, "replay-filter-form").locator('input[name="last"]').fill(str(QUOTES))
    by_testid(page, "replay-filter").click()
    summary.filter(has_text=f"0 identical, {QUOTES} changed, 0 failed").wait_for(timeout=LIVE_TIMEOUT_MS)
    assert by_testid(page, "replay-verdict").inner_text() == "differences"
    assert by_testid(page, "pair-diff").first.inner_text().startswith("changed $.net")
    # The same as a tracked operation: the live board's worker (the leader) replays them.
    page.goto("/replays/")
    page.fill('[data-testid="replay-handler"]', "quotes")
    page.fill('[data-testid="replay-last"]', str(QUOTES))
    by_testid(page, "replays-tracked").check()
    with page.expect_navigation():
        by_testid(page, "replay-submit").click()
    assert "/operations/" in page.url
    by_testid(page, "operation-status").filter(has_text="done").wait_for(timeout=LIVE_TIMEOUT_MS)
    assert f"{QUOTES} replayed, 0 failed" in by_testid(page, "operation-counts").inner_text()
    with page.expect_navigation():
        by_testid(page, "operation-replay-set").click()
    summary.filter(has_text=f"0 identical, {QUOTES} changed, 0 failed").wait_for(timeout=LIVE_TIMEOUT_MS)
    assert by_testid(page, "replay-operation").count() == 1
    assert not page.errors


def test_replay_every_match_from_the_runs_page(operator_page: Any, board: LiveBoard):
    manage(board.env, "shell", "-c", "from tests.browser.test_replays import seed; seed()")
    wait_for(lambda: completed_quotes(board) >= QUOTES, timeout=60, what="the quotes completed", board=board)
    page = operator_page
    page.goto("/runs/?name=quotes&status=completed&window=1h")
    with page.expect_navigation():
        by_testid(page, "replay-matching").click()
    assert "/replays/" in page.url
    by_testid(page, "replay-verdict").wait_for(timeout=LIVE_TIMEOUT_MS)  # shown once every replay finished
    pairs = by_testid(page, "replay-pair")
    assert pairs.count() >= QUOTES and "0 failed" in by_testid(page, "replay-summary").inner_text()
    assert {pairs.nth(i).get_attribute("data-state") for i in range(pairs.count())} <= {"identical", "changed"}
    assert not page.errors

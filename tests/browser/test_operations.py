"""Tracked bulk operations in a real browser (see ``conftest.py``), end to end with the
live board's own worker as the leader that runs them: an operator retries every dead
letter of a queue from the dead-letter page, lands on the operation's page and watches it
finish without a reload; a paused operation resumed with a click runs to the end; the
Operations list shows both; a viewer gets no buttons; a replay operation started from
the New operation form (a missing handler shown on the form first) runs to the end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.harness import LiveBoard, manage, wait_for
from tests.browser.test_board import assert_not_reloaded, by_testid, mark_document, open_nav

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LIVE_TIMEOUT_MS = 30_000
QUEUE, PAUSED_QUEUE, HELD_QUEUE, COUNT = "bulk-browser", "bulk-paused", "bulk-held", 40


def seed() -> None:
    """Run in the board's process environment (``manage shell``): dead letters in two
    queues, and a paused operation over the second."""
    from oqronkit.contrib.django import engine
    from oqronkit.operations import Operations

    host = engine.get_engine()
    for name in (QUEUE, PAUSED_QUEUE):
        queue = host.queue(name)
        for job in queue.add_bulk([{"n": n} for n in range(COUNT)]):
            queue.cancel(job.id, reason="SMTP refused")
    ops = Operations(host)
    for name in (PAUSED_QUEUE, HELD_QUEUE):
        op = ops.create("delete", user="seed", queue=name)
        ops.pause(op.id, user="seed")


@pytest.fixture(scope="module")
def seeded(board: LiveBoard) -> Iterator[LiveBoard]:
    manage(board.env, "shell", "-c", "from tests.browser.test_operations import seed; seed()")
    yield board


def test_retry_all_matching_runs_as_an_operation_with_live_progress(operator_page: Any, seeded: LiveBoard):
    page = operator_page
    page.goto(f"/dead/?queue={QUEUE}")
    with page.expect_navigation():
        by_testid(page, "retry-matching").click()
    assert "/operations/" in page.url
    by_testid(page, "operation-facts").wait_for()
    mark_document(page)
    by_testid(page, "operation-status").filter(has_text="done").wait_for(timeout=LIVE_TIMEOUT_MS)
    assert_not_reloaded(page)  # the progress panel updated in place
    assert f"{COUNT} retried, 0 failed" in by_testid(page, "operation-counts").inner_text()
    assert "100%" in by_testid(page, "operation-progress").inner_text()
    assert seeded.durable().count(f"queue_dlq:{QUEUE}") == 0
    assert not page.errors


def test_resume_a_paused_operation_and_the_history_list(operator_page: Any, seeded: LiveBoard):
    page = operator_page
    page.goto("/")
    open_nav(page, "operations")
    row = by_testid(page, "operation-row").filter(has_text=f"queue {PAUSED_QUEUE}")
    assert "paused" in row.inner_text()
    with page.expect_navigation():
        row.locator("a").first.click()
    mark_document(page)
    by_testid(page, "operation-resume").click()
    by_testid(page, "operation-status").filter(has_text="done").wait_for(timeout=LIVE_TIMEOUT_MS)
    assert_not_reloaded(page)
    assert f"{COUNT} deleted" in by_testid(page, "operation-counts").inner_text()
    history = by_testid(page, "operation-history").inner_text()
    assert "paused" in history and "resume" in history
    assert seeded.durable().count(f"queue_dlq:{PAUSED_QUEUE}") == 0
    assert not page.errors


def test_a_viewer_sees_operations_without_buttons(viewer_page: Any, seeded: LiveBoard):
    page = viewer_page
    page.goto("/operations/?status=paused")
    with page.expect_navigation():
        by_testid(page, "operation-row").filter(has_text=f"queue {HELD_QUEUE}").locator("a").first.click()
    assert "paused" in by_testid(page, "operation-status").inner_text()
    assert by_testid(page, "operation-actions").count() == 0 and by_testid(page, "operation-resume").count() == 0


def test_create_a_replay_operation_from_the_new_operation_form(operator_page: Any, board: LiveBoard):
    from tests.browser.test_replays import QUOTES, completed_quotes

    manage(board.env, "shell", "-c", "from tests.browser.test_replays import seed; seed()")
    wait_for(lambda: completed_quotes(board) >= QUOTES, timeout=60, what="the quotes completed", board=board)
    page = operator_page
    page.goto("/operations/")
    with page.expect_navigation():
        by_testid(page, "operation-new").click()
    by_testid(page, "action-replay").check()
    with page.expect_navigation():
        by_testid(page, "operation-new-submit").click()  # no handler: the form says so
    assert "Say which handler" in by_testid(page, "operation-new-errors").inner_text()
    assert by_testid(page, "action-replay").is_checked()
    assert page.errors == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"]
    page.errors.clear()  # that 400 was the point
    page.fill('input[name="replay-name"]', "quotes")
    page.select_option('select[name="replay-status"]', "completed")
    page.fill('input[name="replay-last"]', "2")
    page.fill('input[name="name"]', "quotes after the deploy")
    with page.expect_navigation():
        by_testid(page, "operation-new-submit").click()
    assert "/operations/" in page.url and "quotes after the deploy" in page.locator("h1").inner_text()
    mark_document(page)
    by_testid(page, "operation-status").filter(has_text="done").wait_for(timeout=LIVE_TIMEOUT_MS)
    assert_not_reloaded(page)  # the progress panel updated in place
    assert "2 replayed, 0 failed" in by_testid(page, "operation-counts").inner_text()
    assert "100%" in by_testid(page, "operation-progress").inner_text()
    assert not page.errors

"""The webhook pages in a real browser (see ``conftest.py``): the workload's ``hooks``
webhook (``workload/oqron.py``) delivers to a receiver on 127.0.0.1 run by this test:
endpoint ``ok`` answers 200, ``hostile`` answers 500 with ``<script>`` markup as its
body, so its deliveries die at once. The pages show that markup as text, never run
it; an operator disables and enables an endpoint and resends deliveries from the
pages; a viewer gets no buttons and a 403."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.harness import LiveBoard, manage, wait_for
from tests.browser.prepare import HOSTILE
from tests.browser.test_board import assert_not_reloaded, by_testid, mark_document, open_nav
from tests.browser.test_topics import watch_dialogs
from tests.receiver import Reply, receiving

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HOOK, OK, BAD = "hooks", "ok", "hostile"
EVENTS = 3
LIVE_TIMEOUT_MS = 20_000
ACTION_BUTTONS = '[data-testid^="disable-"], [data-testid^="enable-"], [data-testid="resend-one"], ' \
                 '[data-testid="resend-matching"]'


def count(board: LiveBoard, namespace: str) -> int:
    plane = board.durable()
    try:
        return plane.count(namespace)
    finally:
        plane.close()


def endpoint(board: LiveBoard, name: str) -> dict[str, Any]:
    plane = board.durable()
    try:
        record = plane.get(f"webhook_endpoints:{HOOK}", name)
        return record.value if record is not None else {}
    finally:
        plane.close()


@pytest.fixture(scope="module")
def fired(board: LiveBoard) -> Iterator[LiveBoard]:
    """Deliveries to both endpoints: ``ok`` delivered, ``hostile`` dead with its markup answer."""
    with receiving() as receiver:
        receiver.script(f"/{BAD}", default=Reply(500, {"content-type": "text/html"}, HOSTILE.encode()))
        manage(board.env, "shell", "-c", "from tests.browser.prepare import fire_webhooks; "
               f"fire_webhooks({receiver.url('')!r}, count={EVENTS})")
        wait_for(lambda: count(board, f"queue_dlq:webhook/{HOOK}") >= EVENTS, timeout=40,
                 what="the hostile endpoint's deliveries dead", board=board)
        wait_for(lambda: len(receiver.requests(f"/{OK}")) >= EVENTS, timeout=20, what="the ok endpoint's deliveries",
                 board=board)
        yield board


def test_webhooks_page_shows_endpoints_rates_and_the_last_failure(operator_page: Any, fired: LiveBoard) -> None:
    page = operator_page
    page.goto("/")
    open_nav(page, "webhooks")
    by_testid(page, f"webhook-{HOOK}").wait_for()
    by_testid(page, f"rate-{HOOK}-{OK}").filter(has_text="100%").wait_for(timeout=LIVE_TIMEOUT_MS)
    assert by_testid(page, f"rate-{HOOK}-{BAD}").inner_text().startswith("0%")
    assert "HTTP 500" in by_testid(page, f"last-failure-{HOOK}-{BAD}").inner_text()
    assert int(by_testid(page, f"webhook-dead-{HOOK}").inner_text()) >= EVENTS
    assert not page.errors


def test_hostile_response_bodies_are_shown_as_text(operator_page: Any, fired: LiveBoard) -> None:
    page = operator_page
    dialogs = watch_dialogs(page)
    page.goto(f"/webhooks/deliveries/?webhook={HOOK}&endpoint={BAD}")
    rows = page.locator('[data-testid="attempt-row"]')
    rows.first.wait_for()
    assert rows.count() >= EVENTS
    with page.expect_navigation():
        rows.first.locator("a[data-open]").click()
    body = by_testid(page, "response-body").first
    assert body.inner_text() == HOSTILE, "the markup answer, as text"
    assert page.locator("main script").count() == 0, "no script element came from a response"
    assert dialogs == [] and not page.errors


def test_disable_and_enable_an_endpoint_without_reload(operator_page: Any, fired: LiveBoard) -> None:
    page = operator_page
    page.goto("/webhooks/")
    mark_document(page)
    page.fill(f'[data-testid="disable-reason-{HOOK}-{OK}"]', "maintenance window")
    by_testid(page, f"disable-{HOOK}-{OK}").click()
    by_testid(page, f"enable-{HOOK}-{OK}").wait_for(timeout=LIVE_TIMEOUT_MS)
    assert "maintenance window" in by_testid(page, "action-message").inner_text()
    assert "maintenance window" in by_testid(page, f"disabled-reason-{HOOK}-{OK}").inner_text()
    wait_for(lambda: endpoint(fired, OK).get("enabled") is False, timeout=5, what="the disabled endpoint")
    by_testid(page, f"enable-{HOOK}-{OK}").click()
    by_testid(page, f"disable-{HOOK}-{OK}").wait_for(timeout=LIVE_TIMEOUT_MS)
    wait_for(lambda: endpoint(fired, OK).get("enabled") is True, timeout=5, what="the enabled endpoint")
    assert_not_reloaded(page)
    assert not page.errors


def test_resend_all_matching_after_a_confirmation_that_counts(operator_page: Any, fired: LiveBoard) -> None:
    page = operator_page
    page.goto(f"/webhooks/deliveries/?webhook={HOOK}&endpoint={BAD}")
    with page.expect_navigation():
        by_testid(page, "resend-matching").click()
    shown = int(by_testid(page, "resend-count").inner_text())
    assert shown >= EVENTS
    with page.expect_navigation():
        by_testid(page, "resend-confirm-button").click()
    assert f"Sent {shown} of {shown}" in page.locator(".messages").inner_text()
    # Each dies again (the receiver still answers 500): the log gets new attempts.
    wait_for(lambda: count(fired, f"queue_dlq:webhook/{HOOK}") >= EVENTS, timeout=40, what="dead again",
             board=fired)
    assert not page.errors


def test_resend_every_match_as_a_tracked_operation(operator_page: Any, fired: LiveBoard) -> None:
    """The live board's worker is the leader that runs it, with the webhook it declares."""
    page = operator_page
    wait_for(lambda: count(fired, f"queue_dlq:webhook/{HOOK}") >= EVENTS, timeout=40, what="dead", board=fired)
    page.goto(f"/webhooks/deliveries/?webhook={HOOK}&endpoint={BAD}")
    with page.expect_navigation():
        by_testid(page, "resend-matching").click()
    with page.expect_navigation():
        by_testid(page, "resend-tracked").click()
    assert "/operations/" in page.url
    mark_document(page)
    by_testid(page, "operation-status").filter(has_text="done").wait_for(timeout=40_000)
    assert_not_reloaded(page)  # the progress panel updated in place
    assert f"{EVENTS} sent again, 0 failed" in by_testid(page, "operation-counts").inner_text()
    assert f"resend deliveries of webhook {HOOK}" in by_testid(page, "operation-filter").inner_text()
    assert not page.errors


def test_a_viewer_sees_the_webhooks_but_no_actions(viewer_page: Any, fired: LiveBoard) -> None:
    page = viewer_page
    page.goto("/webhooks/")
    by_testid(page, f"webhook-{HOOK}").wait_for()
    assert page.locator(ACTION_BUTTONS).count() == 0
    page.goto(f"/webhooks/deliveries/?webhook={HOOK}")
    page.locator('[data-testid="attempt-row"]').first.wait_for()
    assert page.locator(ACTION_BUTTONS).count() == 0
    response = page.request.post(f"/webhooks/{HOOK}/endpoints/{OK}/disable/", form={"reason": "x"})
    assert response.status == 403  # CSRF or the permission: refused either way

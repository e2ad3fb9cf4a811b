"""The topic pages in a real browser (see ``conftest.py``): the workload's ``events``
topic (``workload/oqron.py``) gets plain messages and hostile ones, whose key, header
and payload are ``<script>`` markup and whose delivery to ``mailer`` dies. The pages
show that markup as text, never run it; an operator pauses, resumes and replays a group
from the page; a viewer gets no buttons."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.harness import LiveBoard, manage, wait_for
from tests.browser.prepare import HOSTILE
from tests.browser.test_board import assert_not_reloaded, by_testid, mark_document, open_nav

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TOPIC, CALM, FAILING = "events", "audit", "mailer"
PLAIN, HOSTILE_COUNT = 8, 2
LIVE_TIMEOUT_MS = 20_000
GROUP_BUTTONS = '[data-testid^="pause-group-"], [data-testid^="resume-group-"], [data-testid^="replay-"], ' \
                '[data-testid^="retry-dead-"]'


def group_record(board: LiveBoard, group: str) -> dict[str, Any]:
    plane = board.durable()
    try:
        record = plane.get(f"topic_groups:{TOPIC}", group)
        return record.value if record is not None else {}
    finally:
        plane.close()


def count(board: LiveBoard, namespace: str) -> int:
    plane = board.durable()
    try:
        return plane.count(namespace)
    finally:
        plane.close()


@pytest.fixture(scope="module")
def published(board: LiveBoard) -> LiveBoard:
    """The messages, handled by both groups: the hostile ones dead in ``mailer``."""
    manage(board.env, "shell", "-c",
           f"from tests.browser.prepare import publish; publish(plain={PLAIN}, hostile={HOSTILE_COUNT})")
    wait_for(lambda: count(board, f"queue_dlq:{TOPIC}@{FAILING}") >= HOSTILE_COUNT, timeout=40,
             what="the hostile messages dead in events@mailer", board=board)
    wait_for(lambda: sum(int(v) for v in group_record(board, CALM).get("cursor", {}).values()) >= PLAIN, timeout=20,
             what="the audit group handed every message", board=board)
    return board


def watch_dialogs(page: Any) -> list[str]:
    """Every dialog the page opens (an executed ``alert(1)`` would be one)."""
    opened: list[str] = []
    page.on("dialog", lambda dialog: (opened.append(dialog.message), dialog.dismiss()))
    return opened


def test_topics_page_shows_the_topic_and_its_groups(operator_page: Any, published: LiveBoard) -> None:
    page = operator_page
    page.goto("/")
    open_nav(page, "topics")
    by_testid(page, f"topic-{TOPIC}").wait_for()
    assert int(by_testid(page, f"retained-{TOPIC}").inner_text()) == PLAIN + HOSTILE_COUNT
    assert by_testid(page, f"partitions-{TOPIC}").inner_text() == "2"
    dead = by_testid(page, f"dead-{TOPIC}-{FAILING}")
    assert int(dead.inner_text()) == HOSTILE_COUNT
    assert int(by_testid(page, f"dead-{TOPIC}-{CALM}").inner_text()) == 0
    assert not page.errors


def test_hostile_key_header_and_payload_are_shown_as_text(operator_page: Any, published: LiveBoard) -> None:
    page = operator_page
    dialogs = watch_dialogs(page)
    page.goto("/topics/")
    by_testid(page, f"topic-link-{TOPIC}").click()
    page.wait_for_url(f"**/topics/{TOPIC}/")
    rows = page.locator('[data-testid="message-row"]')
    rows.first.wait_for()
    assert rows.count() == PLAIN + HOSTILE_COUNT
    hostile_rows = rows.filter(has=page.locator('[data-testid="row-key"]', has_text=HOSTILE))
    assert hostile_rows.count() == HOSTILE_COUNT, "the markup key is shown as text"
    assert HOSTILE in hostile_rows.first.locator('[data-testid="row-payload"]').inner_text()
    assert page.locator("main script").count() == 0, "no script element came from a message"
    # Filter on the hostile key through the form, then open one of its messages.
    page.fill('[data-testid="filter-key"]', HOSTILE)
    with page.expect_navigation():
        page.locator('[data-testid="log-filters"] button[type=submit]').click()
    assert rows.count() == HOSTILE_COUNT
    with page.expect_navigation():
        rows.first.locator("a[data-open]").click()
    assert HOSTILE in by_testid(page, "message-key").inner_text()
    assert HOSTILE in by_testid(page, "message-payload").inner_text()
    headers = by_testid(page, "message-headers").inner_text()
    assert headers.count(HOSTILE) == 2, "the header's name and value, as text"
    failing = by_testid(page, f"delivery-{FAILING}")
    assert "dead letter" in failing.inner_text() and "cannot mail" in failing.inner_text()
    assert page.locator("main script").count() == 0
    assert dialogs == [] and not page.errors


def test_pause_and_resume_a_group_without_reload(operator_page: Any, published: LiveBoard) -> None:
    page = operator_page
    page.goto("/topics/")
    mark_document(page)
    by_testid(page, f"pause-group-{TOPIC}-{CALM}").click()
    by_testid(page, f"resume-group-{TOPIC}-{CALM}").wait_for(timeout=LIVE_TIMEOUT_MS)
    assert "paused" in by_testid(page, "action-message").inner_text()
    wait_for(lambda: group_record(published, CALM).get("paused") is True, timeout=5, what="the paused group")
    by_testid(page, f"resume-group-{TOPIC}-{CALM}").click()
    by_testid(page, f"pause-group-{TOPIC}-{CALM}").wait_for(timeout=LIVE_TIMEOUT_MS)
    wait_for(lambda: group_record(published, CALM).get("paused") is False, timeout=5, what="the resumed group")
    assert_not_reloaded(page)
    assert not page.errors


def test_replay_a_group_after_a_confirmation_that_counts(operator_page: Any, published: LiveBoard) -> None:
    page = operator_page
    page.goto("/topics/")
    with page.expect_navigation():
        by_testid(page, f"replay-{TOPIC}-{CALM}").click()
    page.fill('[data-testid="replay-position"]', "0")
    with page.expect_navigation():
        by_testid(page, "replay-preview").click()
    total = PLAIN + HOSTILE_COUNT
    assert f"receive {total} retained messages" in " ".join(by_testid(page, "replay-count").inner_text().split())
    assert group_record(published, CALM)["cursor"] != {"0": -1, "1": -1}, "the preview changed nothing"
    with page.expect_navigation():
        by_testid(page, "replay-confirm-button").click()
    assert f"{total} retained message(s)" in page.locator(".messages").inner_text()
    assert page.url.endswith("/topics/"), "back to the page the replay started from"
    # The group receives them all again.
    wait_for(lambda: sum(int(v) for v in group_record(published, CALM)["cursor"].values()) >= PLAIN, timeout=20,
             what="the audit group handed every message again", board=published)
    assert not page.errors


def test_a_bad_replay_position_is_a_400_with_a_message(operator_page: Any, published: LiveBoard) -> None:
    page = operator_page
    page.goto(f"/topics/{TOPIC}/groups/{CALM}/replay/")
    page.fill('[data-testid="replay-position"]', "next tuesday")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        by_testid(page, "replay-preview").click()
    assert answer.value.status == 400
    assert "Cannot replay from 'next tuesday'" in page.locator("main").inner_text()


def test_a_viewer_sees_the_topics_but_no_group_actions(viewer_page: Any, published: LiveBoard) -> None:
    page = viewer_page
    page.goto("/topics/")
    by_testid(page, f"topic-{TOPIC}").wait_for()
    assert page.locator(GROUP_BUTTONS).count() == 0
    response = page.request.get(f"/topics/{TOPIC}/groups/{CALM}/replay/")
    assert response.status == 403

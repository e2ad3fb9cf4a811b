"""The dead letters' groups in a real browser: a first viewer's page comes without them
(counting them reads every dead letter) and htmx loads them at once; with script off,
the page's link leads to them. The workload's dead letters are in ``payments``."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.browser.harness import LiveBoard

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGE = "/dead/?queue=payments"
GROUP_ROW = '[data-testid="dlq-groups"] tr[data-testid^="group-"]'
LATER = 'data-testid="dlq-groups-later"'
TIMEOUT_MS = 15_000
# How long the live board's viewers share the groups (OQRON_BOARD_CACHE_SECONDS' default).
SHARED_SECONDS = 2.0


def as_first_viewer() -> None:
    """Let the groups an earlier request left fresh expire: the page is then a first viewer's."""
    time.sleep(SHARED_SECONDS + 0.5)


def test_the_groups_arrive_after_the_page(operator_page: Any, board: LiveBoard) -> None:
    page = operator_page
    as_first_viewer()
    with page.expect_response(lambda r: "panel=groups" in r.url and r.request.headers.get("hx-request") == "true"
                              ) as loaded:
        response = page.goto(PAGE)
    assert response is not None and LATER in response.text(), "the server's page came without the groups"
    assert loaded.value.status == 200
    page.locator(GROUP_ROW).first.wait_for(timeout=TIMEOUT_MS)
    assert page.locator(f"[{LATER}]").count() == 0, "the groups took the link's place"
    assert page.locator('[data-testid^="retry-group-"]').count() >= 1
    assert page.locator('[data-testid="dead-row"]').count() >= 1
    assert not page.errors


def test_without_script_the_link_leads_to_the_groups(browser: Any, board: LiveBoard, logins: dict[str, str]) -> None:
    context = browser.new_context(base_url=board.url, storage_state=logins["operator"], java_script_enabled=False)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        as_first_viewer()
        page.goto(PAGE)
        link = page.locator('[data-testid="dlq-groups-link"]')
        assert link.count() == 1 and page.locator(GROUP_ROW).count() == 0
        assert page.locator('[data-testid="dead-row"]').count() >= 1
        with page.expect_navigation():
            link.click()
        assert "panel=groups" in page.url
        assert page.locator(GROUP_ROW).count() >= 1
        with page.expect_navigation():
            page.locator('[data-testid="dead-letters-back"]').click()
        assert page.url.endswith(PAGE)
    finally:
        context.close()

"""The trace page in a real browser (issue 37, item 1): a checkout added under a
correlation id runs on the live worker; its handler's email job and topic message
inherit the id. The id jump box leads to the timeline, which nests them under the
checkout's run; a row leads to the run's page, whose correlation id leads back."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.harness import LiveBoard, manage, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CID = "browser-trace-7001"


def test_follow_a_checkout_from_the_jump_box_to_its_runs_and_back(operator_page: Any, board: LiveBoard) -> None:
    manage(board.env, "shell", "-c", f"from tests.browser.prepare import checkout; checkout({CID!r})")
    plane = board.durable()
    try:
        def settled() -> bool:
            runs = [r.value for r in plane.list(table="runs", correlation=CID, limit=50).records
                    if r.namespace == "runs"]
            return len(runs) >= 2 and all(r.get("status") == "completed" for r in runs)

        wait_for(settled, timeout=60, what="the checkout's and the email's runs completed", board=board)
    finally:
        plane.close()
    page = operator_page
    page.goto("/")
    page.fill('[data-testid="jump"]', CID)
    with page.expect_navigation():
        page.press('[data-testid="jump"]', "Enter")
    assert page.url.endswith(f"/trace/{CID}/"), page.url
    rows = page.locator('[data-testid="trace-row"]')
    kinds = [(rows.nth(i).get_attribute("data-kind"), rows.nth(i).get_attribute("data-depth"))
             for i in range(rows.count())]
    assert kinds[0] == ("run", "0") and ("run", "1") in kinds and ("message", "1") in kinds, kinds
    assert "checkout" in rows.first.inner_text()
    email_run = page.locator('[data-testid="trace-row"][data-kind="run"][data-depth="1"]').first
    assert "completed" in email_run.inner_text()
    with page.expect_navigation():
        email_run.locator("a").first.click()
    assert "/runs/" in page.url
    with page.expect_navigation():
        page.locator('[data-testid="trace-link"]').first.click()
    assert page.url.endswith(f"/trace/{CID}/")
    assert not page.errors

"""The Limits and Caches pages in a real browser (see ``conftest.py``): a cache and a
rate limiter declared by a process of the board's scope; an operator invalidates a tag
and resets a key without a reload; hostile tags and keys show as text; a viewer gets
no buttons and a 403."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.harness import LiveBoard, manage
from tests.browser.prepare import HOSTILE
from tests.browser.test_board import assert_not_reloaded, by_testid, mark_document, open_nav

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LIVE_TIMEOUT_MS = 20_000


def seed() -> None:
    """Run in the board's process environment (``manage shell``)."""
    from oqronkit.caches import Cache
    from oqronkit.contrib.django import engine
    from oqronkit.ratelimit import RateLimiter

    host = engine.get_engine()
    cache = Cache("pages", ttl=60, tags=["people", HOSTILE], engine=host)
    cache.set("page:1", {"n": 1})
    cache.get("page:1")
    cache.stats_counters.flush()
    limiter = RateLimiter("api", limit=2, period=60, ban=(1, 60, 600), engine=host)
    limiter.check("alice")
    limiter.check(HOSTILE)


@pytest.fixture(scope="module")
def seeded(board: LiveBoard) -> Iterator[LiveBoard]:
    manage(board.env, "shell", "-c", "from tests.browser.test_limits_caches import seed; seed()")
    yield board


def test_invalidate_a_cache_tag_without_reload_and_hostile_tags_are_text(operator_page: Any, seeded: LiveBoard):
    page = operator_page
    page.goto("/")
    open_nav(page, "caches")
    by_testid(page, "cache-pages").wait_for()
    assert HOSTILE in by_testid(page, "cache-pages").inner_text()  # the markup as text
    mark_document(page)
    page.fill('[data-testid="invalidate-value-pages"]', "people")
    by_testid(page, "invalidate-pages").click()
    by_testid(page, "action-message").filter(has_text="invalidated").wait_for(timeout=LIVE_TIMEOUT_MS)
    assert_not_reloaded(page)
    assert not page.errors


def test_a_keys_usage_and_a_reset_without_reload(operator_page: Any, seeded: LiveBoard):
    page = operator_page
    page.goto("/")
    open_nav(page, "limits")
    by_testid(page, "limiter-api").wait_for()
    page.fill('[data-testid="usage-key"]', HOSTILE)
    with page.expect_navigation():
        by_testid(page, "usage-show").click()
    assert by_testid(page, "usage-key-shown").inner_text() == HOSTILE
    assert by_testid(page, "usage-remaining").inner_text() == "1"
    mark_document(page)
    by_testid(page, "limit-reset").click()
    by_testid(page, "usage-remaining").filter(has_text="2").wait_for(timeout=LIVE_TIMEOUT_MS)
    assert "reset" in by_testid(page, "action-message").inner_text()
    assert_not_reloaded(page)
    assert not page.errors


def test_a_viewer_sees_both_pages_but_no_actions(viewer_page: Any, seeded: LiveBoard):
    page = viewer_page
    page.goto("/caches/")
    by_testid(page, "cache-pages").wait_for()
    assert page.locator('[data-testid^="invalidate-"]').count() == 0
    page.goto("/limits/?limiter=api&key=alice")
    by_testid(page, "usage").wait_for()
    assert page.locator('[data-testid^="limit-"]').count() == 0
    assert page.request.post("/caches/pages/invalidate/", form={"by": "tag", "value": "people"}).status == 403
    assert page.request.post("/limits/api/reset/", form={"key": "alice"}).status == 403

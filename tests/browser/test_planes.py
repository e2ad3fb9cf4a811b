"""The Plane drift page in a real browser (see ``conftest.py``): jobs the hot plane lost
(the scope's hot rows of delayed emails deleted, as a Redis flush would) show as drift;
the operator presses Reconcile now, the page turns clean without a reload and the
operator's pass shows in the repairs table; the overview links the page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.harness import LiveBoard, manage
from tests.browser.test_board import assert_not_reloaded, by_testid, mark_document

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LIVE_TIMEOUT_MS = 20_000
LOST = 4


def lose(n: int = LOST) -> None:
    """Run in the board's process environment (``manage shell``): delayed emails stored a
    minute ago whose hot entries are gone."""
    from oqronkit.clock import now_ms
    from oqronkit.contrib.django import engine
    from oqronkit.namespaces import job_namespace

    host = engine.get_engine()
    jobs = [host.queue("emails").add({"to": f"lost{i}@example.com"}, delay=3600) for i in range(n)]
    for job in jobs:
        record = host.durable.get(job_namespace("emails"), job.id)
        assert record is not None
        host.durable.put(job_namespace("emails"), job.id, {**record.value, "updatedAt": now_ms() - 60_000})
    host.hot.remove("emails", [job.id for job in jobs])
    print(",".join(job.id for job in jobs))


def forget(ids: str) -> None:
    """Remove the test's delayed emails again, from both planes."""
    from oqronkit.contrib.django import engine
    from oqronkit.namespaces import job_namespace

    host = engine.get_engine()
    host.hot.remove("emails", ids.split(","))
    host.durable.delete_many(job_namespace("emails"), ids.split(","))


@pytest.fixture
def lost(board: LiveBoard) -> Iterator[str]:
    ids = manage(board.env, "shell", "-c", "from tests.browser.test_planes import lose; lose()").strip()
    assert len(ids.split(",")) == LOST
    yield ids
    manage(board.env, "shell", "-c", f"from tests.browser.test_planes import forget; forget({ids!r})")


def test_the_drift_shows_and_reconcile_now_repairs_it_without_reload(operator_page: Any, lost: str):
    page = operator_page
    page.goto("/planes/")
    cell = by_testid(page, "unsignalled-emails")
    cell.wait_for()
    # The leader's own reconciler may repair first (two passes, 5 s apart); either way
    # the lost jobs showed, or the repair that signalled them did.
    shown = int(re.match(r"\s*(\d+)", cell.inner_text()).group(1))
    assert shown >= LOST or by_testid(page, "repairs").count() == 1
    mark_document(page)
    by_testid(page, "reconcile-now").click()
    by_testid(page, "action-message").filter(has_text="Reconciler started").wait_for(timeout=LIVE_TIMEOUT_MS)
    by_testid(page, "planes-clean").wait_for(timeout=LIVE_TIMEOUT_MS)
    by_testid(page, "repairs").locator("text=operator").first.wait_for(timeout=LIVE_TIMEOUT_MS)
    assert by_testid(page, "unsignalled-emails").inner_text().strip().startswith("0")
    assert_not_reloaded(page)
    assert not page.errors
    page.goto("/")
    with page.expect_navigation():
        by_testid(page, "planes-link").click()
    assert page.url.endswith("/planes/")


def test_a_viewer_sees_the_page_but_no_button(viewer_page: Any, board: LiveBoard):
    page = viewer_page
    page.goto("/planes/")
    by_testid(page, "service-passes").wait_for()
    assert by_testid(page, "reconcile-now").count() == 0
    assert not page.errors

"""The board in a real browser: Debian's Chromium against ``runserver`` and a real
``runworker`` (see ``conftest.py``). The workload (``workload/oqron.py``) gives dead
letters in ``payments``, completed jobs in ``emails`` and long jobs with a
progress bar in ``reports``.

The pages expose ``data-testid`` hooks: nav links (``nav-<page>``), failed-run rows,
the run progress bar (``progress``, with ``aria-valuenow``), the DLQ depth per queue
(``dlq-depth-<queue>``), and the buttons ``retry-<job id>``, ``pause-<queue>`` and
``resume-<queue>``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.harness import LiveBoard, log_in, manage, running_run, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FLAKY, STEADY = "payments", "emails"  # the dead letters; a queue to pause
LIVE_TIMEOUT_MS = 20_000
ACTION_BUTTONS = ", ".join(f'[data-testid^="{action}-"]'
                           for action in ("retry", "pause", "resume", "cancel", "promote", "delete"))
# Browser-side predicates for wait_for_function: [selector, previous value].
PROGRESS_ABOVE = """([sel, v]) => {
    const bar = document.querySelector(sel);
    return bar && Number(bar.getAttribute('aria-valuenow')) > v;
}"""
NUMBER_BELOW = """([sel, v]) => {
    const el = document.querySelector(sel);
    return el && Number(el.innerText.replace(/\\D/g, '')) < v;
}"""
FORM_OF_BUTTON = """b => ({
    action: b.form.getAttribute('hx-post') || b.form.action,
    fields: Object.fromEntries(new FormData(b.form)),
})"""


# -- helpers -------------------------------------------------------------------------


def by_testid(page: Any, value: str) -> Any:
    return page.locator(f'[data-testid="{value}"]')


def open_nav(page: Any, *keys: str) -> None:
    """Follow the first nav link whose test id contains one of ``keys`` (e.g. ``failed``)."""
    links = page.locator('[data-testid^="nav-"]')
    ids = [links.nth(i).get_attribute("data-testid") or "" for i in range(links.count())]
    for key in keys:
        match = next((i for i in ids if key in i), None)
        if match is not None:
            with page.expect_navigation():
                by_testid(page, match).first.click()
            return
    raise AssertionError(f"no nav link for {keys} among {ids}")


def mark_document(page: Any) -> None:
    """Tag the current document: the tag survives htmx swaps, not a reload."""
    page.evaluate("window.__oqronNoReload = 'still-here'")


def assert_not_reloaded(page: Any) -> None:
    assert page.evaluate("window.__oqronNoReload") == "still-here", "the page reloaded"


def number(text: str) -> int:
    digits = re.sub(r"[^\d]", "", text)
    assert digits, f"no number in {text!r}"
    return int(digits)


def dead_job_ids(board: LiveBoard, queue: str) -> list[str]:
    plane = board.durable()
    try:
        return [r.id for r in plane.list(f"queue_dlq:{queue}", limit=100).records]
    finally:
        plane.close()


def is_paused(board: LiveBoard, queue: str) -> bool:
    plane = board.durable()
    try:
        record = plane.get("queue", queue)
        return bool(record and record.value.get("paused"))
    finally:
        plane.close()


def current_running_run(board: LiveBoard) -> dict[str, Any]:
    """A running ``reports`` run; enqueue another slow job if the others finished."""
    run = running_run(board)
    if run is None or run.get("progressPercent", 0) > 90:
        manage(board.env, "shell", "-c", "from tests.browser.prepare import enqueue; enqueue(slow=1)")
        run = wait_for(lambda: _fresh_run(board), timeout=20, what="a fresh reports run", board=board)
    return run


def _fresh_run(board: LiveBoard) -> dict[str, Any] | None:
    run = running_run(board)
    return run if run is not None and run.get("progressPercent", 0) <= 90 else None


def run_url(run_id: str) -> str:
    """The run page's path, from the board's URLconf."""
    from django.urls import reverse

    return reverse("oqronboard:run", args=[run_id])


def job_url(queue: str, job_id: str) -> str:
    from django.urls import reverse

    return reverse("oqronboard:job", args=[queue, job_id])


# -- tests ---------------------------------------------------------------------------


def test_log_in(anonymous_page: Any, board: LiveBoard) -> None:
    page = anonymous_page
    page.goto("/")
    assert "/accounts/login" in page.url, "an anonymous visitor is sent to the login page"
    log_in(page, board, "operator")
    assert "/accounts/login" not in page.url
    assert page.locator('[data-testid^="nav-"]').count() >= 3, "the board's navigation is shown after login"
    assert not page.errors


def test_failed_runs_are_listed(operator_page: Any) -> None:
    page = operator_page
    page.goto("/")
    open_nav(page, "failed")
    rows = page.locator('[data-testid="failed-run-row"]')
    rows.first.wait_for()
    flaky_rows = rows.filter(has_text=FLAKY)
    assert flaky_rows.count() >= 1, "the flaky queue's failures are listed"
    text = flaky_rows.first.inner_text()
    assert "payment gateway refused" in text or "card of customer" in text, "a failed row shows its error"
    assert not page.errors


def test_open_a_failed_run(operator_page: Any) -> None:
    page = operator_page
    page.goto("/")
    open_nav(page, "failed")
    # One of the gateway failures (every fourth flaky order fails on its card instead,
    # and which failure is newest depends on the worker's timing).
    row = page.locator('[data-testid="failed-run-row"]').filter(has_text=FLAKY) \
        .filter(has_text="payment gateway refused").first
    with page.expect_navigation():
        row.locator("a").first.click()
    body = page.locator("body")
    for text in ("ConnectionError", "payment gateway refused order", "Traceback", "order"):
        assert text in body.inner_text(), f"the run page shows {text!r}"
    assert not page.errors


def test_progress_bar_advances_without_reload(operator_page: Any, board: LiveBoard) -> None:
    page = operator_page
    run = current_running_run(board)
    page.goto(run_url(run["id"]))
    bar = by_testid(page, "progress")
    bar.wait_for()
    first = float(bar.get_attribute("aria-valuenow") or 0)
    so_far = by_testid(page, "run-duration").inner_text()
    mark_document(page)
    page.wait_for_function(
        PROGRESS_ABOVE, arg=['[data-testid="progress"]', first], timeout=LIVE_TIMEOUT_MS,
    )
    # The header's "so far" follows the live panel (swapped out of band with each poll).
    page.wait_for_function(
        "t => document.querySelector('[data-testid=\"run-duration\"]').innerText !== t",
        arg=so_far, timeout=LIVE_TIMEOUT_MS,
    )
    assert_not_reloaded(page)
    assert not page.errors


def test_retry_a_dead_job_and_the_dlq_depth_drops(operator_page: Any, board: LiveBoard) -> None:
    page = operator_page
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto("/")
    open_nav(page, "dead")
    depth = by_testid(page, f"dlq-depth-{FLAKY}")
    before = number(depth.inner_text())
    dead = dead_job_ids(board, FLAKY)
    assert before == len(dead) >= 1
    job_id = next(j for j in dead if by_testid(page, f"retry-{j}").count())
    mark_document(page)
    by_testid(page, f"retry-{job_id}").first.click()
    page.wait_for_function(
        NUMBER_BELOW, arg=[f'[data-testid="dlq-depth-{FLAKY}"]', before], timeout=LIVE_TIMEOUT_MS,
    )
    assert number(depth.inner_text()) == before - 1
    assert_not_reloaded(page)
    assert job_id not in dead_job_ids(board, FLAKY), "the job left the dead-letter queue"
    assert not page.errors


def test_pause_and_resume_a_queue(operator_page: Any, board: LiveBoard) -> None:
    page = operator_page
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto("/")
    open_nav(page, "definitions")
    by_testid(page, f"pause-{STEADY}").click()
    by_testid(page, f"resume-{STEADY}").wait_for()
    wait_for(lambda: is_paused(board, STEADY), timeout=5, what="the queue's paused control state")
    by_testid(page, f"resume-{STEADY}").click()
    by_testid(page, f"pause-{STEADY}").wait_for()
    wait_for(lambda: not is_paused(board, STEADY), timeout=5, what="the queue's resumed control state")
    assert not page.errors


def action_form(page: Any, nav_key: str, button: str) -> dict[str, Any]:
    """The URL and fields of the form behind an operator's ``button`` on a nav page."""
    page.goto("/")
    open_nav(page, nav_key)
    form = by_testid(page, button).first.evaluate(FORM_OF_BUTTON)
    assert form["action"], f"the form of {button} names its action URL"
    return form


def test_viewer_sees_no_actions_and_is_refused(operator_page: Any, viewer_page: Any, board: LiveBoard) -> None:
    dead = dead_job_ids(board, FLAKY)
    assert dead, "a dead letter to try to retry"
    # What the operator's buttons post, to replay as the viewer.
    forms = [action_form(operator_page, "dead", f"retry-{dead[0]}"),
             action_form(operator_page, "definitions", f"pause-{STEADY}")]

    page = viewer_page
    for keys in (("dead",), ("definitions",), ("failed",), ("jobs",)):
        page.goto("/")
        open_nav(page, *keys)
        page.wait_for_load_state("networkidle")
        assert page.locator(ACTION_BUTTONS).count() == 0, f"a viewer sees no action buttons on {page.url}"
    page.goto(job_url(FLAKY, dead[0]))
    by_testid(page, "job-status").wait_for()
    assert page.locator(ACTION_BUTTONS).count() == 0, "a viewer sees no action buttons on a dead job's page"

    token = csrf_token(page)
    for form in forms:
        response = page.request.post(form["action"], headers={"X-CSRFToken": token, "HX-Request": "true"},
                                     form={**form["fields"], "csrfmiddlewaretoken": token})
        assert response.status == 403, f"a viewer's POST to {form['action']} answered {response.status}"
    assert dead[0] in dead_job_ids(board, FLAKY), "the refused retry changed nothing"
    assert not is_paused(board, STEADY), "the refused pause changed nothing"


def csrf_token(page: Any) -> str:
    """The CSRF token the page hands htmx (``hx-headers``), or Django's cookie."""
    headers = page.locator("[hx-headers]").first
    if headers.count():
        found = re.search(r'"X-CSRFToken"\s*:\s*"([^"]+)"', headers.get_attribute("hx-headers") or "")
        if found:
            return found.group(1)
    cookie = next((c for c in page.context.cookies() if c["name"] == "csrftoken"), None)
    assert cookie, "no CSRF token on the page or in the cookies"
    return cookie["value"]

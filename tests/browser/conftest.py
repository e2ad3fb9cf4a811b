"""Fixtures of the browser tests: Debian's Chromium, one live board per session
(``runserver`` + a real ``runworker`` on a temporary SQLite file), and a logged-in page
per role.

Without ``/usr/bin/chromium`` the tests skip with the reason, except under ``CI=true``
where they fail. A failing test leaves a screenshot and the server and worker logs in
``test-results/browser/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.harness import ROOT, LiveBoard, chromium, chromium_missing, default_workload, live_board, log_in
from tests.services import in_ci

RESULTS = ROOT / "test-results" / "browser"
DEFAULT_TIMEOUT_MS = 15_000


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    """Remember each phase's outcome on the item, so page fixtures know a test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Chromium, or a skip (a failure under CI) saying why it cannot run."""
    reason = chromium_missing()
    if reason is not None:
        if in_ci():
            pytest.fail(f"{reason}; CI=true, so browser tests fail instead of skipping.")
        pytest.skip(reason)
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="session")
def board(browser: Any) -> Iterator[LiveBoard]:
    """The live board with its workload: dead letters, completed and running jobs."""
    with live_board(workload=default_workload) as live:
        yield live


@pytest.fixture(scope="session")
def logins(browser: Any, board: LiveBoard, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each role logs in once; tests reuse the saved session cookies."""
    states = {}
    for role in ("operator", "viewer"):
        context = browser.new_context()
        page = context.new_page()
        log_in(page, board, role)
        path = tmp_path_factory.mktemp("logins") / f"{role}.json"
        context.storage_state(path=str(path))
        context.close()
        states[role] = str(path)
    return states


def _page(browser: Any, board: LiveBoard, request: pytest.FixtureRequest, storage: str | None) -> Iterator[Any]:
    context = browser.new_context(base_url=board.url, storage_state=storage, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # Console errors include Content-Security-Policy violations ("Refused to ...").
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.errors = errors  # for tests that check there are none
    try:
        yield page
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            _keep_evidence(page, board, request.node.name)
        context.close()


def _keep_evidence(page: Any, board: LiveBoard, name: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    try:
        page.screenshot(path=str(RESULTS / f"{name}.png"), full_page=True)
    except Exception:  # the page may be gone; the logs still help
        pass
    for process in ("server", "worker"):
        (RESULTS / f"{name}-{process}.log").write_text(board.log(process))


@pytest.fixture
def anonymous_page(browser: Any, board: LiveBoard, request: pytest.FixtureRequest) -> Iterator[Any]:
    yield from _page(browser, board, request, None)


@pytest.fixture
def operator_page(
    browser: Any, board: LiveBoard, logins: dict[str, str], request: pytest.FixtureRequest
) -> Iterator[Any]:
    yield from _page(browser, board, request, logins["operator"])


@pytest.fixture
def viewer_page(
    browser: Any, board: LiveBoard, logins: dict[str, str], request: pytest.FixtureRequest
) -> Iterator[Any]:
    yield from _page(browser, board, request, logins["viewer"])


"""The Logs page: module logs newest first in keyset pages, filtered by module, level,
window and text; the first page tails live; hostile messages are text; bad filters 400."""

from __future__ import annotations

import re

from django.urls import reverse

from oqronkit import RecordWrite
from oqronkit.clock import now_ms
from oqronkit.ids import new_id
from tests.board.seed import Board


def log(board: Board, module: str, message: str, *, level: str = "info", ago_ms: int = 0, **extra: str) -> str:
    at = now_ms() - ago_ms
    record_id = f"{at:012x}{new_id()[12:]}"
    board.plane.put_many([RecordWrite(f"module_logs:{module}", record_id, {
        "at": at, "module": module, "level": level, "logger": f"oqronkit.{module}", "message": message, **extra})])
    return record_id


def messages(body: str) -> list[str]:
    return [m.strip() for m in re.findall(r'data-testid="log-row">.*?<td>[^<]*</td>\s*<td>.*?</td>\s*<td>([^<]*)',
                                          body, re.S)]


def test_newest_first_with_module_level_window_and_text_filters(board: Board):
    log(board, "worker", "claimed 5 jobs", ago_ms=3000)
    log(board, "worker", "lease lost on emails", level="warning", ago_ms=2000, action="worker.lease_lost",
        queue="emails")
    log(board, "queue", "added to emails", ago_ms=1000)
    log(board, "scheduler", "two days old", ago_ms=2 * 86_400_000)
    body = board.viewer.get(reverse("oqronboard:logs")).content.decode()
    assert messages(body) == ["added to emails", "lease lost on emails", "claimed 5 jobs"]
    assert "worker.lease_lost" in body and "queue emails" in body
    get = board.viewer.get
    assert messages(get(reverse("oqronboard:logs"), {"module": "worker"}).content.decode()) == \
        ["lease lost on emails", "claimed 5 jobs"]
    assert messages(get(reverse("oqronboard:logs"), {"level": "warning"}).content.decode()) == ["lease lost on emails"]
    assert messages(get(reverse("oqronboard:logs"), {"text": "EMAILS"}).content.decode()) == \
        ["added to emails", "lease lost on emails"]
    assert "two days old" in get(reverse("oqronboard:logs"), {"window": "7d"}).content.decode()


def test_keyset_pages_and_a_live_first_page(board: Board):
    for i in range(55):
        log(board, "worker", f"line {i:02d}", ago_ms=60_000 - i * 100)
    page = board.viewer.get(reverse("oqronboard:logs"), {"module": "worker"}).content.decode()
    assert messages(page)[:2] == ["line 54", "line 53"] and len(messages(page)) == 50
    more = re.search(r'hx-get="\?([^"]+)"[^>]*data-testid="load-more"', page).group(1).replace("&amp;", "&")
    rest = board.viewer.get(reverse("oqronboard:logs") + "?" + more, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in rest and messages(rest) == [f"line {i:02d}" for i in range(4, -1, -1)]
    assert 'hx-get="?module=worker&amp;window=24h&amp;panel=live"' in page
    live = board.viewer.get(reverse("oqronboard:logs"), {"module": "worker", "panel": "live"}, HTTP_HX_REQUEST="true")
    assert "<html" not in live.content.decode() and 'data-testid="logs-table"' in live.content.decode()


def test_messages_are_text_other_scopes_are_not_shown_and_bad_filters_are_400(board: Board):
    log(board, "worker", "<script>alert(1)</script>", level="error", error="<img src=x onerror=alert(2)>")
    body = board.viewer.get(reverse("oqronboard:logs")).content.decode()
    assert "<script>alert(1)" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "<img src=x" not in body
    board.plane.scoped(project=board.scope.project + "-other", environment="production").put_many(
        [RecordWrite("module_logs:worker", new_id(), {"at": now_ms(), "level": "info", "message": "elsewhere"})])
    assert "elsewhere" not in board.viewer.get(reverse("oqronboard:logs")).content.decode()
    for bad in ({"module": "nope"}, {"level": "loud"}, {"window": "2y"}, {"text": "x" * 300}):
        response = board.viewer.get(reverse("oqronboard:logs"), bad)
        assert response.status_code == 400, bad
    assert 'data-testid="logs-off"' in body  # the board's own engine keeps none here
    assert 'data-testid="nav-logs"' in body

"""The webhook pages: every webhook with its endpoints (state, breaker, last hour's
success rate and p95, last failure; live), the delivery log (newest first, keyset
pages, filters) and a delivery with its attempts, request beside response."""

from __future__ import annotations

import re

from django.urls import reverse

from oqronboard import webhooks
from oqronboard.base.cursors import PAGE_SIZE, decode_cursor
from oqronboard.runs.webhooks import AttemptFilters, attempt_page
from oqronkit.clock import now_ms
from tests.board.seed import Board
from tests.board.webhook_seed import HOSTILE, attempt, breaker, declare, fire, settle


def run_ids(body: str) -> list[str]:
    return re.findall(r'data-testid="attempt-row" data-run-id="([^"]+)"', body)


def cell(body: str, testid: str) -> str:
    found = re.search(rf'data-testid="{re.escape(testid)}"[^>]*>(?:<a [^>]*>)?([^<]*)<', body)
    assert found, testid
    return found.group(1).strip()


def test_webhooks_page_shows_endpoints_state_breaker_rate_p95_and_last_failure(board: Board):
    billing = declare(board)
    shop, crm = sorted(fire(billing), key=lambda i: not i.endswith("@shop"))
    for n, ms in enumerate((10, 20, 30, 40), start=1):
        attempt(board, billing, shop, attempt_no=n, ms=ms)
    attempt(board, billing, shop, status="failed", http=503, attempt_no=5, ms=900)
    attempt(board, billing, crm, status="failed", http=None, error_message="ConnectError: refused")
    settle(board, billing, crm, dead=True)
    breaker(board, billing, "crm", "open")
    billing.hook.disable_endpoint("crm", "the CRM moved")
    body = board.viewer.get(reverse("oqronboard:webhooks")).content.decode()
    assert 'data-testid="webhook-billing"' in body
    assert cell(body, "rate-billing-shop") == "80%" and cell(body, "p95-billing-shop").endswith("ms")
    assert cell(body, "breaker-billing-shop") == "closed" and cell(body, "breaker-billing-crm") == "open"
    assert cell(body, "disabled-reason-billing-crm") == "the CRM moved"
    assert "ConnectError: refused" in body and "HTTP 503" in body
    assert cell(body, "webhook-dead-billing") == "1" and cell(body, "webhook-inflight-billing") == "1"
    row = webhooks.build(board.scope).get("billing").get("shop")
    assert row.p95_ms == 900 and row.succeeded == 4 and row.failed == 1


def test_webhooks_live_panel_is_a_fragment_within_three_queries(board: Board):
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    billing = declare(board)
    attempt(board, billing, fire(billing)[0])
    board.viewer.get(reverse("oqronboard:webhooks"))  # the first request opens the engine's planes
    with CaptureQueriesContext(connections[board.db.alias]) as captured:
        live = board.viewer.get(reverse("oqronboard:webhooks"), {"panel": "live"}, HTTP_HX_REQUEST="true")
    body = live.content.decode()
    assert live.status_code == 200 and "<html" not in body and 'data-testid="endpoint-billing-shop"' in body
    board_queries = [q for q in captured.captured_queries if "oqron_" in q["sql"]]
    assert len(board_queries) <= 3, [q["sql"][:200] for q in board_queries]


def test_no_webhook_says_so_and_the_nav_links_the_page(board: Board):
    body = board.viewer.get(reverse("oqronboard:webhooks")).content.decode()
    assert 'data-testid="no-webhooks"' in body
    assert 'data-testid="nav-webhooks"' in body and f'href="{reverse("oqronboard:webhooks")}"' in body


def test_the_log_is_newest_first_in_keyset_pages(board: Board):
    billing = declare(board)
    ids = fire(billing) + fire(billing, "user.created")
    start = now_ms() - 10_000
    runs = [attempt(board, billing, d, attempt_no=n, started=start + (i * 3 + n) * 7)
            for i, d in enumerate(ids) for n in range(1, 4)]
    body = board.viewer.get(reverse("oqronboard:webhook-log")).content.decode()
    assert run_ids(body) == list(reversed(runs))
    paged: list[str] = []
    cursor = None
    while True:
        rows, next_cursor = attempt_page(board.scope, AttemptFilters(since=0, cursor=cursor), limit=2)
        paged += [r["id"] for r in rows]
        if next_cursor is None:
            break
        cursor = decode_cursor(next_cursor)
    assert paged == list(reversed(runs))


def test_load_more_returns_just_the_next_rows(board: Board):
    billing = declare(board, endpoints=("crm",))
    delivery = fire(billing)[0]
    for n in range(60):
        attempt(board, billing, delivery, attempt_no=n + 1, started=now_ms() - 100_000 + n)
    assert PAGE_SIZE == 50
    url = reverse("oqronboard:webhook-log")
    body = board.viewer.get(url).content.decode()
    first = run_ids(body)
    more = re.search(r'hx-get="\?([^"]+)"[^>]*data-testid="load-more"', body).group(1).replace("&amp;", "&")
    rest = board.viewer.get(f"{url}?{more}", HTTP_HX_REQUEST="true").content.decode()
    assert len(first) == 50 and "<html" not in rest and len(run_ids(rest)) == 10
    assert not set(first) & set(run_ids(rest))


def test_log_filters_on_webhook_endpoint_event_status_and_time(board: Board):
    billing, shipping = declare(board), declare(board, "shipping", endpoints=("depot",))
    paid = fire(billing)  # shop and crm
    created = fire(billing, "user.created")  # crm only (shop takes order.*)
    shipped = fire(shipping, "parcel.sent")
    ok = {d: attempt(board, billing, d) for d in paid + created}
    bad = attempt(board, billing, paid[0], status="failed", http=500, attempt_no=2)
    other = attempt(board, shipping, shipped[0])
    url = reverse("oqronboard:webhook-log")
    assert set(run_ids(board.viewer.get(url, {"webhook": "shipping"}).content.decode())) == {other}
    assert set(run_ids(board.viewer.get(url, {"webhook": "billing", "endpoint": "crm"}).content.decode())) == \
        {ok[d] for d in paid + created if d.endswith("@crm")} | ({bad} if paid[0].endswith("@crm") else set())
    assert set(run_ids(board.viewer.get(url, {"event": "user.created"}).content.decode())) == {ok[created[0]]}
    assert run_ids(board.viewer.get(url, {"status": "failed"}).content.decode()) == [bad]
    empty = board.viewer.get(url, {"before": "2001-01-01T00:00"}).content.decode()
    assert run_ids(empty) == [] and "No attempt matches" in empty
    assert len(run_ids(board.viewer.get(url, {"window": "1h"}).content.decode())) == 5


def test_bad_log_filters_are_400_with_a_message(board: Board):
    url = reverse("oqronboard:webhook-log")
    for params, text in (({"window": "2y"}, "window"), ({"before": "yesterday"}, "started before"),
                         ({"status": "nope"}, "status"), ({"cursor": "!!"}, "Cursor malformed"),
                         ({"endpoint": "e" * 100}, "endpoint")):
        response = board.viewer.get(url, params)
        assert response.status_code == 400, params
        assert text in response.content.decode(), (params, response.content[:300])


def test_a_delivery_shows_its_attempts_request_beside_response(board: Board):
    billing = declare(board)
    delivery = fire(billing)[0]
    first = attempt(board, billing, delivery, status="failed", http=503, body="try later", attempt_no=1)
    second = attempt(board, billing, delivery, http=200, body="thanks", attempt_no=2)
    settle(board, billing, delivery)
    body = board.viewer.get(reverse("oqronboard:webhook-delivery", args=["billing", delivery])).content.decode()
    assert first in body and second in body and "try later" in body and "thanks" in body
    assert "HTTP 503" in body and "HTTP 200" in body and 'data-testid="attempt-request"' in body
    facts = body.split("delivery-facts")[1].split("</dl>")[0]
    assert "order.paid" in facts and "delivered" in facts, facts
    assert board.viewer.get(reverse("oqronboard:webhook-delivery", args=["billing", "nope@shop"])).status_code == 404
    run_page = board.viewer.get(reverse("oqronboard:run", args=[second])).content.decode()
    link = reverse("oqronboard:webhook-delivery", args=["billing", delivery])
    assert f'href="{link}" data-testid="run-delivery-link"' in run_page and "answered HTTP 200" in run_page
    assert board.viewer.get(reverse("oqronboard:webhook-delivery", args=["nope", delivery])).status_code == 404


def test_a_dead_delivery_says_so_and_links_nothing_it_should_not(board: Board):
    billing = declare(board)
    delivery = fire(billing)[0]
    attempt(board, billing, delivery, status="failed", http=500)
    settle(board, billing, delivery, dead=True)
    body = board.viewer.get(reverse("oqronboard:webhook-delivery", args=["billing", delivery])).content.decode()
    assert "dead letter" in body and 'data-testid="resend-one"' not in body  # a viewer
    body = board.operator.get(reverse("oqronboard:webhook-delivery", args=["billing", delivery])).content.decode()
    assert 'data-testid="resend-one"' in body


def test_hostile_response_bodies_headers_and_events_are_escaped(board: Board):
    billing = declare(board, endpoints=("crm",))
    delivery = fire(billing, "order.paid", {"note": HOSTILE})[0]
    attempt(board, billing, delivery, status="failed", http=500, body=HOSTILE, error_message=HOSTILE)
    billing.hook.disable_endpoint("crm", HOSTILE)
    pages = [board.viewer.get(reverse("oqronboard:webhooks")), board.viewer.get(reverse("oqronboard:webhook-log")),
             board.viewer.get(reverse("oqronboard:webhook-log"), {"event": HOSTILE}),
             board.viewer.get(reverse("oqronboard:webhook-delivery", args=["billing", delivery]))]
    for response in pages:
        body = response.content.decode()
        assert response.status_code == 200
        assert "<script>alert" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[0].content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[3].content.decode()


def test_another_scopes_webhooks_are_not_shown(board: Board):
    from oqronboard.base.scope import BoardScope

    other = BoardScope(board.db.project + "-other", board.db.environment)
    spy = declare(board, "secret-hook", scope=other)
    delivery = fire(spy)[0]
    attempt(board, spy, delivery)
    declare(board)
    body = board.viewer.get(reverse("oqronboard:webhooks")).content.decode()
    assert "secret-hook" not in body and 'data-testid="webhook-billing"' in body
    assert run_ids(board.viewer.get(reverse("oqronboard:webhook-log"),
                                    {"webhook": "secret-hook"}).content.decode()) == []
    assert run_ids(board.viewer.get(reverse("oqronboard:webhook-log")).content.decode()) == []
    assert board.viewer.get(reverse("oqronboard:webhook-delivery", args=["secret-hook", delivery])).status_code == 404

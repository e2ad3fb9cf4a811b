"""The pub/sub pages: topics with their groups, a topic's retained log (newest first,
keyset pages, filters) and a message with its deliveries per group."""

from __future__ import annotations

import re

from django.urls import reverse

from oqronboard import topics
from oqronboard.base.cursors import PAGE_SIZE, decode_cursor
from oqronboard.base.filters import HOUR_MS
from oqronboard.runs import topics as runs_topics
from oqronboard.runs.topics import MessageFilters, message_page
from oqronkit.clock import now_ms
from oqronkit.topics import log
from tests.board.seed import Board
from tests.board.topic_seed import HOSTILE, dead, delivery_run, group, in_flight, publish


def message_ids(body: str) -> list[str]:
    return re.findall(r'data-testid="message-row" data-message-id="([^"]+)"', body)


def cell(body: str, testid: str) -> str:
    found = re.search(rf'data-testid="{re.escape(testid)}"[^>]*>(?:<a [^>]*>)?([^<]*)<', body)
    assert found, testid
    return found.group(1).strip()


def delivery(body: str, group: str) -> str:
    """The HTML of one group's delivery block on a message page."""
    return body.split(f'data-testid="delivery-{group}"')[1].split('class="delivery"')[0]


def test_topics_page_counts_retained_messages_and_each_groups_lag_in_flight_and_dead(board: Board):
    orders = publish(board, count=12)
    group(board, orders, "billing", handed=8)
    group(board, orders, "shipping", handed=12, paused=True)
    in_flight(board, orders, "billing", orders.ids[6])
    in_flight(board, orders, "billing", orders.ids[7])
    dead(board, orders, "billing", orders.ids[0])
    publish(board, "audit-log", partitions=1, count=3)
    body = board.viewer.get(reverse("oqronboard:topics")).content.decode()
    assert cell(body, "retained-orders") == "12" and cell(body, "partitions-orders") == "2"
    assert cell(body, "retained-audit-log") == "3" and cell(body, "partitions-audit-log") == "1"
    assert cell(body, "rate-orders") == "12"  # all published in the last hour
    assert cell(body, "lag-orders-billing") == "4" and cell(body, "lag-orders-shipping") == "0"
    assert cell(body, "inflight-orders-billing") == "2" and cell(body, "dead-orders-billing") == "1"
    assert 'data-testid="paused-orders-shipping"' in body and 'data-testid="paused-orders-billing"' not in body
    assert 'href="/topics/orders/"' in body


def test_topics_live_panel_is_a_fragment_within_three_queries(board: Board):
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    orders = publish(board, count=6)
    group(board, orders, "billing", handed=2)
    board.viewer.get(reverse("oqronboard:topics"))  # the first request opens the engine's planes
    with CaptureQueriesContext(connections[board.db.alias]) as captured:
        live = board.viewer.get(reverse("oqronboard:topics"), {"panel": "live"}, HTTP_HX_REQUEST="true")
    body = live.content.decode()
    assert live.status_code == 200 and "<html" not in body and 'data-testid="retained-orders">6<' in body
    board_queries = [q for q in captured.captured_queries if "oqron_" in q["sql"]]
    assert len(board_queries) <= 3, [q["sql"][:200] for q in board_queries]


def _append(board: Board, topic: str, partition: int, count: int, at: int) -> None:
    """``count`` messages appended to one partition, published at ``at`` (as a producer then would)."""
    drafts = [log.Draft(id=f"{topic}-{partition}-{at}-{n}", key=f"k{n}", payload={"n": n}, headers={},
                        correlation_id=None, idempotency_key=None, published_at=at) for n in range(count)]
    log.append(board.plane, topic, partition, drafts)


def test_the_last_hour_is_each_partitions_next_offset_minus_its_first_of_the_hour(board: Board):
    """Issue 37 item 6: the hour's messages come from the offsets, not from counting rows:
    exact however busy the hour, the older messages left out."""
    two_hours_ago = now_ms() - 2 * HOUR_MS
    _append(board, "orders", 0, 4, two_hours_ago)
    _append(board, "orders", 1, 3, two_hours_ago)
    publish(board, count=250)  # now, over both partitions: more than the 200 a count once stopped at
    busy = topics.build(board.scope).get("orders")
    assert busy is not None and busy.retained == 257
    assert busy.last_hour == 250 and not busy.last_hour_partial and busy.per_minute == 250 / 60
    body = board.viewer.get(reverse("oqronboard:topics")).content.decode()
    assert cell(body, "rate-orders") == "250"


def test_a_partition_whose_first_of_the_hour_was_not_read_counts_at_least(board: Board, monkeypatch):
    minute = 60_000
    _append(board, "orders", 0, 5, now_ms() - 10 * minute)
    _append(board, "orders", 1, 3, now_ms() - 5 * minute)
    publish(board, count=1)  # declares the topic
    assert topics.build(board.scope).get("orders").last_hour == 9
    monkeypatch.setattr(runs_topics, "WINDOW_ENTRIES", 3)  # the first three of the hour: partition 0's
    orders = topics.build(board.scope).get("orders")
    assert orders.last_hour_partial and 6 <= orders.last_hour < 9
    body = board.viewer.get(reverse("oqronboard:topics")).content.decode()
    assert cell(body, "rate-orders") == f"{orders.last_hour}+" and "at least" in body


def test_no_topic_says_so(board: Board):
    body = board.viewer.get(reverse("oqronboard:topics")).content.decode()
    assert 'data-testid="no-topics"' in body


def test_the_log_is_newest_first_in_keyset_pages(board: Board):
    orders = publish(board, count=12)
    newest_first = sorted(orders.ids, key=lambda i: (orders.messages[i]["publishedAt"], i), reverse=True)
    assert message_ids(board.viewer.get(reverse("oqronboard:topic-log",
                                                args=["orders"])).content.decode()) == newest_first
    # Small pages to the end: no row twice, none missed, the same order.
    paged: list[str] = []
    cursor = None
    while True:
        rows, next_cursor = message_page(board.scope, "orders", MessageFilters(cursor=cursor), limit=5)
        paged += [r["id"] for r in rows]
        if next_cursor is None:
            break
        cursor = decode_cursor(next_cursor)
    assert paged == newest_first


def test_load_more_returns_just_the_next_rows(board: Board):
    orders = publish(board, count=60)
    assert PAGE_SIZE == 50
    url = reverse("oqronboard:topic-log", args=["orders"])
    body = board.viewer.get(url).content.decode()
    first = message_ids(body)
    assert len(first) == 50
    more = re.search(r'hx-get="\?([^"]+)"[^>]*data-testid="load-more"', body).group(1).replace("&amp;", "&")
    rest = board.viewer.get(f"{url}?{more}", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in rest and len(message_ids(rest)) == 10
    assert sorted(first + message_ids(rest)) == sorted(orders.ids)


def test_log_filters_on_key_correlation_and_time(board: Board):
    orders = publish(board, count=12)
    url = reverse("oqronboard:topic-log", args=["orders"])
    by_key = message_ids(board.viewer.get(url, {"key": "bob"}).content.decode())
    assert sorted(by_key) == sorted(i for i in orders.ids if orders.messages[i]["key"] == "bob")
    by_corr = message_ids(board.viewer.get(url, {"correlation": "corr-0"}).content.decode())
    assert sorted(by_corr) == sorted(i for i in orders.ids if orders.messages[i]["correlationId"] == "corr-0")
    both = message_ids(board.viewer.get(url, {"key": "bob", "correlation": "corr-0"}).content.decode())
    assert len(both) == 2
    assert len(message_ids(board.viewer.get(url, {"window": "1h"}).content.decode())) == 12
    empty = board.viewer.get(url, {"before": "2001-01-01T00:00"}).content.decode()
    assert message_ids(empty) == [] and 'data-testid="log-empty"' in empty and "No retained message matches" in empty
    assert len(message_ids(board.viewer.get(url, {"before": "2999-01-01T00:00Z"}).content.decode())) == 12


def test_bad_log_filters_are_400_with_a_message(board: Board):
    publish(board, count=2)
    url = reverse("oqronboard:topic-log", args=["orders"])
    for params, text in (({"window": "2y"}, "window"), ({"before": "yesterday"}, "published before"),
                         ({"before": "1969-01-01"}, "1970"), ({"cursor": "!!"}, "Cursor malformed"),
                         ({"key": "k" * 300}, "key")):
        response = board.viewer.get(url, params)
        assert response.status_code == 400, params
        assert text in response.content.decode(), (params, response.content[:300])


def test_unknown_topic_is_404(board: Board):
    assert board.viewer.get(reverse("oqronboard:topic-log", args=["nope"])).status_code == 404
    assert board.viewer.get(reverse("oqronboard:topic-message", args=["nope", "m1"])).status_code == 404


def test_message_detail_shows_payload_headers_and_deliveries_per_group(board: Board):
    orders = publish(board, count=6)
    group(board, orders, "billing", handed=6)
    group(board, orders, "shipping", handed=6)
    group(board, orders, "audit", handed=0)
    target = orders.ids[2]
    first = delivery_run(board, orders, "billing", target, status="failed", attempt=1)
    second = delivery_run(board, orders, "billing", target, status="failed", attempt=2, message="still down")
    dead(board, orders, "billing", target)
    delivery_run(board, orders, "shipping", target, status="completed")
    body = board.viewer.get(reverse("oqronboard:topic-message", args=["orders", target])).content.decode()
    assert '"item": "sku-2"' in body.replace("&quot;", '"') and "shop-2" in body
    assert 'data-testid="delivery-billing"' in body and 'data-testid="delivery-shipping"' in body
    billing = delivery(body, "billing")
    assert "dead letter" in billing and first in billing and second in billing and "still down" in billing
    assert reverse("oqronboard:job", args=["orders@billing", target]) in billing
    shipping = delivery(body, "shipping")
    assert "delivered" in shipping
    audit = delivery(body, "audit")
    assert "not yet handed over" in audit
    assert board.viewer.get(reverse("oqronboard:topic-message", args=["orders", "missing"])).status_code == 404


def test_an_in_flight_delivery_links_its_job(board: Board):
    orders = publish(board, count=3)
    group(board, orders, "billing", handed=3)
    in_flight(board, orders, "billing", orders.ids[1])
    body = board.viewer.get(reverse("oqronboard:topic-message", args=["orders", orders.ids[1]])).content.decode()
    assert 'data-testid="delivery-job-billing"' in body and "in flight" in body


def test_nav_links_to_topics(board: Board):
    body = board.viewer.get(reverse("oqronboard:home")).content.decode()
    assert 'data-testid="nav-topics"' in body and f'href="{reverse("oqronboard:topics")}"' in body
    assert now_ms()


def test_a_delivery_run_links_its_message_and_its_job(board: Board):
    orders = publish(board, count=3)
    group(board, orders, "billing", handed=3)
    run_id = delivery_run(board, orders, "billing", orders.ids[0], status="failed")
    dead(board, orders, "billing", orders.ids[0])
    body = board.viewer.get(reverse("oqronboard:run", args=[run_id])).content.decode()
    assert reverse("oqronboard:topic-message", args=["orders", orders.ids[0]]) in body
    assert 'data-testid="run-job-link"' in body and reverse("oqronboard:job", args=["orders@billing",
                                                                                    orders.ids[0]]) in body
    runs = board.viewer.get(reverse("oqronboard:runs"), {"module": "topic"}).content.decode()
    assert f'data-run-id="{run_id}"' in runs


def test_hostile_keys_headers_and_payloads_are_escaped(board: Board):
    orders = publish(board, count=3, hostile=True)
    group(board, orders, "billing", handed=3)
    hostile_id = orders.ids[-1]
    pages = [board.viewer.get(reverse("oqronboard:topic-log", args=["orders"])),
             board.viewer.get(reverse("oqronboard:topic-log", args=["orders"]), {"key": HOSTILE}),
             board.viewer.get(reverse("oqronboard:topic-message", args=["orders", hostile_id]))]
    for response in pages:
        body = response.content.decode()
        assert response.status_code == 200
        assert "<script>alert" not in body
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert message_ids(pages[1].content.decode()) == [hostile_id]
    assert "?key=%3Cscript%3Ealert%281%29%3C/script%3E" in pages[0].content.decode()

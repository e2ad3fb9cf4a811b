"""The dead-letter page's groups, counted after the page when no viewer left them fresh:
the page answers with the list and the depth, and a link the htmx script follows at
once (``hx-trigger="load"``) and a browser without script follows by hand, to a page of
the groups alone. (tests/browser/test_dead_groups.py: the same in Chromium.)"""

from __future__ import annotations

import re

from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from oqronkit.clock import now_ms
from tests.board.seed import MINUTE, Board, dead_job, put_jobs

GROUPS_STATEMENT = "WITH RECURSIVE fps"  # dead_groups' skip scan of the fingerprints


def seed(board: Board) -> None:
    now = now_ms()
    put_jobs(board.plane, [
        dead_job("emails", "e1", message="user 42 not found", kind="LookupError", died=now - 5 * MINUTE),
        dead_job("emails", "e2", message="SMTP refused", kind="ConnectionError", died=now - 4 * MINUTE),
        dead_job("sms", "s1", message="user 9 not found", kind="LookupError", died=now - 2 * MINUTE),
    ])


def group_rows(body: str) -> list[str]:
    return re.findall(r'data-testid="group-([0-9a-f]+)"', body)


def later_link(body: str) -> str:
    """The href of the link to the groups, which must also be the htmx request on load."""
    match = re.search(r'data-testid="dlq-groups-later"><a href="([^"]+)" hx-get="([^"]+)" hx-trigger="load"', body)
    assert match is not None, "the page links to its groups"
    assert match.group(1) == match.group(2)
    return match.group(1).replace("&amp;", "&")


def test_a_first_viewer_gets_the_page_without_counting_the_groups(board: Board):
    seed(board)
    with CaptureQueriesContext(connections[board.db.alias]) as queries:
        body = board.viewer.get(reverse("oqronboard:dead-letters"), {"q": "not found"}).content.decode()
    statements = [q["sql"] for q in queries.captured_queries]
    assert any("oqron_jobs" in sql for sql in statements)  # the list's, captured
    assert not any(GROUPS_STATEMENT in sql for sql in statements)
    assert re.findall(r'data-testid="dead-row" data-job-id="([^"]+)"', body) == ["s1", "e1"]
    assert 'data-testid="dlq-depth-emails">2<' in body and group_rows(body) == []
    assert later_link(body) == reverse("oqronboard:dead-letters") + "?panel=groups"


def test_the_link_loads_the_groups_with_htmx_and_is_a_page_without_script(board: Board):
    seed(board)
    link = later_link(board.viewer.get(reverse("oqronboard:dead-letters"), {"queue": "emails"}).content.decode())
    assert link == reverse("oqronboard:dead-letters") + "?panel=groups&queue=emails"
    fragment = board.viewer.get(link, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and len(group_rows(fragment)) == 2 and "dead-row" not in fragment
    page = board.viewer.get(link)
    text = page.content.decode()
    assert page.status_code == 200 and "<html" in text and 'data-testid="dlq-groups-page"' in text
    assert sorted(group_rows(text)) == sorted(group_rows(fragment))
    assert 'href="/dead/?queue=emails" data-testid="dead-letters-back"' in text
    every_queue = board.viewer.get(reverse("oqronboard:dead-letters"), {"panel": "groups"}).content.decode()
    assert len(group_rows(every_queue)) == 2 and "SMTP refused" in every_queue  # "user <n> not found": one group
    operator = board.operator.get(link).content.decode()
    assert 'data-testid="retry-group-' in operator and 'name="rendered_at"' in operator


def test_groups_another_viewer_left_fresh_come_with_the_page(board: Board, settings):
    settings.OQRON_BOARD_CACHE_SECONDS = 30
    seed(board)
    assert group_rows(board.viewer.get(reverse("oqronboard:dead-letters")).content.decode()) == []
    board.viewer.get(reverse("oqronboard:dead-letters"), {"panel": "groups"}, HTTP_HX_REQUEST="true")
    with CaptureQueriesContext(connections[board.db.alias]) as queries:
        body = board.viewer.get(reverse("oqronboard:dead-letters")).content.decode()
    assert not any(GROUPS_STATEMENT in q["sql"] for q in queries.captured_queries)
    assert len(group_rows(body)) == 2 and 'data-testid="dlq-groups-later"' not in body
    assert body.count('data-testid="read-at"') == 2  # the depth's and the groups'
    in_sms = board.viewer.get(reverse("oqronboard:dead-letters"), {"queue": "sms"}).content.decode()
    assert 'data-testid="dlq-groups-later"' in in_sms  # another queue's groups: not held
    assert board.operator.post(reverse("oqronboard:dead-retry"), {"mode": "ids", "ids": ["emails:e1"]}).status_code \
        in (200, 302)
    assert 'data-testid="dlq-groups-later"' in board.viewer.get(reverse("oqronboard:dead-letters")).content.decode()


def test_the_api_answers_the_list_and_names_where_the_groups_are_counted(board: Board, settings):
    settings.OQRON_BOARD_CACHE_SECONDS = 30
    seed(board)
    with CaptureQueriesContext(connections[board.db.alias]) as queries:
        first = board.viewer.get(reverse("oqronboard:api-dead"), {"queue": "emails"}).json()
    assert not any(GROUPS_STATEMENT in q["sql"] for q in queries.captured_queries)
    assert [r["id"] for r in first["results"]] == ["e2", "e1"] and first["depths"] == {"emails": 2, "sms": 1}
    assert first["groups"] is None and first["groups_read_at"] is None
    assert first["groups_url"] == reverse("oqronboard:api-dead-groups") + "?queue=emails"
    counted = board.viewer.get(first["groups_url"]).json()
    assert sorted(g["error_type"] for g in counted["groups"]) == ["ConnectionError", "LookupError"]
    assert counted["groups_read_at"] <= now_ms()
    again = board.viewer.get(reverse("oqronboard:api-dead"), {"queue": "emails"}).json()
    assert again["groups"] == counted["groups"] and again["groups_read_at"] == counted["groups_read_at"]
    every = board.viewer.get(reverse("oqronboard:api-dead-groups")).json()["groups"]
    assert sum(g["count"] for g in every) == 3  # the unfiltered groups: their own shared figure

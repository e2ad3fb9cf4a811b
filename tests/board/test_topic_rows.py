"""The topics panel's group rows, built in Python (oqronboard.topic_rows): every value
escaped, the action cells only for an operator, each form with the page's CSRF token
and way back, and the pages render them."""

from __future__ import annotations

import html

from django.urls import reverse

from oqronboard.topic_links import topic_links
from oqronboard.topic_rows import Actions, group_rows
from oqronboard.topics import GroupRow, TopicRow
from tests.board.seed import Board
from tests.board.topic_seed import dead, group, publish

HOSTILE = "<img src=x onerror=alert(1)>&\"'"


def topic_with(*groups: GroupRow) -> TopicRow:
    return TopicRow(name=HOSTILE, partitions=2, defined=True, definition={}, paused=False, partition_rows=[],
                    groups=list(groups))


def a_group(name: str, *, paused: bool = False, dead: int = 0) -> GroupRow:
    return GroupRow(topic=HOSTILE, name=name, paused=paused, lag=1234, lag_partitions={0: 1000, 1: 234}, cursor={},
                    start_from=f"earliest {HOSTILE}", updated_at=None, in_flight=7, dead=dead)


def test_every_value_is_escaped_and_viewers_get_no_actions():
    topic = topic_with(a_group(HOSTILE, dead=3))
    out = str(group_rows(topic, topic_links([topic], back="/topics/")[HOSTILE], None))
    assert "<img" not in out and "onerror=alert(1)>" not in out
    assert html.escape(HOSTILE) in out
    assert 'title="partition 0: 1000, partition 1: 234"' in out and ">1234</td>" in out
    assert "<form" not in out and "Replay" not in out


def test_an_operator_gets_each_action_with_the_token_and_the_way_back():
    topic = topic_with(a_group("live", dead=3), a_group("held", paused=True))
    links = topic_links([topic], back="/topics/")[HOSTILE]
    actions = Actions(path="/topics/?x=<b>", csrf_token="tok<en>", rendered_at=1_700_000_000_000,
                      rendered_at_text="2023-11-14 22:13:20 UTC", action_cap=1000)
    out = str(group_rows(topic, links, actions))
    live, held = links.groups["live"], links.groups["held"]
    for url in (live.pause, live.retry_dead, held.resume):
        assert f'action="{html.escape(url)}" hx-post="{html.escape(url)}"' in out
    assert held.pause not in out and held.retry_dead not in out  # paused: no pause; no dead letters: no retry
    assert out.count('name="csrfmiddlewaretoken" value="tok&lt;en&gt;"') == 3
    assert out.count('name="next" value="/topics/?x=&lt;b&gt;"') == 3
    assert 'name="rendered_at" value="1700000000000"' in out and "Retry 3 dead" in out
    assert f'href="{html.escape(live.replay)}"' in out and f'href="{html.escape(held.replay)}"' in out


def test_an_operator_pauses_a_group_with_the_rendered_form(board: Board):
    orders = publish(board, "eu.orders", count=4)
    group(board, orders, "billing", handed=1)
    dead(board, orders, "billing", orders.ids[0])
    board.operator.get(reverse("oqronboard:topics"))
    body = board.operator.get(reverse("oqronboard:topics")).content.decode()
    pause = reverse("oqronboard:group-pause", args=["eu.orders", "billing"])
    form = body.split(f'action="{pause}"', 1)[1].split("</form>", 1)[0]
    token = form.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    board.operator.handler.enforce_csrf_checks = True
    try:
        answered = board.operator.post(pause, {"csrfmiddlewaretoken": token, "next": "/topics/"})
    finally:
        board.operator.handler.enforce_csrf_checks = False
    assert answered.status_code in (200, 302)
    assert 'data-testid="paused-eu.orders-billing"' in board.operator.get(reverse("oqronboard:topics")).content.decode()

"""The topics panel's links, built from three reversed prefixes (oqronboard.topic_links),
are the URLs ``reverse()`` gives, for plain and escaped names, under any script prefix;
and the pages render them."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.urls import get_script_prefix, reverse, set_script_prefix

from oqronboard.topic_links import topic_links
from oqronboard.topics import GroupRow, TopicRow
from tests.board.seed import Board
from tests.board.topic_seed import dead, group, publish

# A plain name, one the ``seg`` converter escapes (a slash, a space, markup) and a route's literal.
NAMES = ("orders", "eu/orders 2", "<b>&'", "pause")


def group_row(topic: str, name: str) -> GroupRow:
    return GroupRow(topic=topic, name=name, paused=False, lag=0, lag_partitions={}, cursor={}, start_from="",
                    updated_at=None)


def expected(topic: str, name: str, back: str) -> dict[str, str]:
    args = [topic, name]
    return {
        "page": reverse("oqronboard:topic-group", args=args),
        "pause": reverse("oqronboard:group-pause", args=args),
        "resume": reverse("oqronboard:group-resume", args=args),
        "replay": reverse("oqronboard:group-replay", args=args) + "?next=" + quote(back, safe="/"),
        "retry_dead": reverse("oqronboard:group-retry-dead", args=args),
        "queue": reverse("oqronboard:queue-jobs", args=[f"{topic}@{name}"]),
        "dead": reverse("oqronboard:dead-letters") + "?queue=" + quote(f"{topic}@{name}", safe="/"),
    }


@pytest.mark.parametrize("prefix", ["/", "/ops/board/"])
def test_each_link_is_the_url_reverse_gives(prefix: str):
    before = get_script_prefix()
    set_script_prefix(prefix)
    try:
        rows = [TopicRow(name=t, partitions=1, defined=True, definition={}, paused=False, partition_rows=[],
                         groups=[group_row(t, g) for g in NAMES]) for t in NAMES]
        links = topic_links(rows, back=prefix + "topics/")
        for topic in NAMES:
            assert links[topic].log == reverse("oqronboard:topic-log", args=[topic])
            for name in NAMES:
                found = links[topic].groups[name]
                assert vars(found) == expected(topic, name, prefix + "topics/"), (topic, name)
    finally:
        set_script_prefix(before)


def test_the_pages_link_each_group_and_its_actions(board: Board):
    orders = publish(board, "eu.orders", count=4)
    group(board, orders, "billing", handed=1)
    group(board, orders, "pause", handed=4, paused=True)
    dead(board, orders, "billing", orders.ids[0])
    for url in (reverse("oqronboard:topics"), reverse("oqronboard:topic-log", args=["eu.orders"])):
        body = board.operator.get(url).content.decode()
        assert f'href="{reverse("oqronboard:topic-log", args=["eu.orders"])}"' in body
        for name, action in (("billing", "pause"), ("pause", "resume"), ("billing", "retry-dead")):
            assert f'action="{reverse(f"oqronboard:group-{action}", args=["eu.orders", name])}"' in body, (url, name)
        for name in ("billing", "pause"):
            links = expected("eu.orders", name, url)
            for key in ("page", "queue", "dead", "replay"):
                assert f'href="{links[key]}"' in body, (url, name, key)

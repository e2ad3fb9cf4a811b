"""The dead letters' error groups count each group up to a cap: past it the panel shows
"<cap>+" and says what the figure means, the API says ``capped``; first and last seen
stay exact (the ends of the group's index range)."""

from __future__ import annotations

import re

from django.urls import reverse

from oqronboard.jobs import dead
from oqronboard.jobs.queries import dead_groups
from oqronkit.clock import now_ms
from tests.board.seed import MINUTE, Board, dead_job, put_jobs


def seed(board: Board) -> int:
    now = now_ms()
    put_jobs(board.plane, [
        dead_job("emails", "e1", message="user 1 not found", kind="LookupError", died=now - 5 * MINUTE),
        dead_job("emails", "e2", message="user 2 not found", kind="LookupError", died=now - 4 * MINUTE),
        dead_job("sms", "s1", message="user 3 not found", kind="LookupError", died=now - 3 * MINUTE),
        dead_job("emails", "e3", message="SMTP refused", kind="ConnectionError", died=now - 2 * MINUTE),
    ])
    return now


def by_type(groups: list[dict]) -> dict[str, tuple[int, bool]]:
    return {g["error_type"]: (g["count"], g["capped"]) for g in groups}


def test_a_group_is_counted_up_to_the_cap_and_its_ends_stay_exact(board: Board):
    now = seed(board)
    capped = dead_groups(board.scope, cap=2)
    assert by_type(capped) == {"LookupError": (2, True), "ConnectionError": (1, False)}
    lookup = next(g for g in capped if g["error_type"] == "LookupError")
    assert (lookup["first"], lookup["last"]) == (now - 5 * MINUTE, now - 3 * MINUTE)
    assert by_type(dead_groups(board.scope, cap=3)) == {"LookupError": (3, False), "ConnectionError": (1, False)}


def test_the_panel_shows_a_capped_count_and_says_what_it_means(board: Board, monkeypatch):
    seed(board)
    url = reverse("oqronboard:dead-letters")
    exact = board.viewer.get(url, {"panel": "groups"}, HTTP_HX_REQUEST="true").content.decode()
    assert 'data-testid="group-count-capped"' not in exact and 'data-testid="dlq-groups-capped"' not in exact
    monkeypatch.setattr(dead, "GROUP_COUNT_CAP", 2)
    body = board.viewer.get(url, {"panel": "groups"}, HTTP_HX_REQUEST="true").content.decode()
    assert re.findall(r'data-testid="group-count-capped"[^>]*>([^<]+)<', body) == ["2+"]
    assert "data-testid=\"dlq-groups-capped\">Each group's dead letters are counted up to 2:" in body
    api = board.viewer.get(reverse("oqronboard:api-dead-groups")).json()["groups"]
    assert by_type(api) == {"LookupError": (2, True), "ConnectionError": (1, False)}

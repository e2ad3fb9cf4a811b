"""Fuzz every URL pattern and every filter of the board (and the admin) with hostile
values, on Postgres, as operator and viewer, GET and POST: no answer is a 5xx.

The patterns come from Django's resolver, so a new page is fuzzed without a change
here; a page's filters are the field names and query keys its own HTML uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from oqronkit.caches import Cache
from oqronkit.clock import now_ms
from oqronkit.ratelimit import RateLimiter
from tests.board.hostile import crafted_cursor, raw_put
from tests.board.seed import Board, dead_job, error, job_value, put_jobs, put_runs, queue_control, run_value
from tests.board.topic_seed import dead, group, publish
from tests.board.webhook_seed import attempt, declare, fire, settle

# URL text (already percent-encoded where a raw character could not travel).
PATH_VALUES = [
    "NaN", "1e400", "9" * 400, "a%00b", "%ED%A0%80", "x" * 10_000, "a%2Fb", "a%0Ab", "..", "~!!", "~AA", "retry",
]
QUERY_VALUES = [
    "NaN", "Infinity", "1e400", "9" * 400, "a%00b", "%ED%A0%80", "x" * 10_000, "a%0Ab",
    crafted_cursor("NaN"), crafted_cursor("1", '"\\ud800"'),
]
# Tried one key at a time (each other value goes with every key at once).
KEY_VALUES = {"NaN", "9" * 400, "a%00b", "x" * 10_000, QUERY_VALUES[-2]}
# Keys a page reads without showing them in its HTML.
ALWAYS_KEYS = ("cursor", "panel", "next", "format", "before")
SKIP = {"logout"}  # it would log the client out mid-walk; test_access covers it
PARAM = re.compile(r"<(?:\w+:)?\w+>|\(\?P<\w+>[^()]*\)")
KEYS_IN_HTML = re.compile(r'name="([A-Za-z_][\w-]*)"|[?&;]([A-Za-z_][\w-]*)=')


def patterns(resolver: URLResolver | None = None, prefix: str = "") -> Iterator[tuple[str, str | None]]:
    """Every pattern as a template with ``{}`` for each parameter, and its name."""
    for entry in (resolver or get_resolver()).url_patterns:
        text = prefix + str(entry.pattern).replace("^", "").replace("$", "")
        if isinstance(entry, URLResolver):
            yield from patterns(entry, text)
        elif isinstance(entry, URLPattern):
            yield PARAM.sub("{}", text), entry.name


def urls_of(template: str) -> Iterator[str]:
    count = template.count("{}")
    if not count:
        yield "/" + template
        return
    for value in PATH_VALUES:
        # Every parameter hostile at once, then each alone beside plain ones.
        yield "/" + template.format(*[value] * count)
        for i in range(count if count > 1 and not template.startswith("admin/") else 0):
            yield "/" + template.format(*[value if j == i else "emails" for j in range(count)])


def seed(board: Board) -> None:
    plane = board.plane
    for queue in ("emails", "team/emails"):
        queue_control(plane, queue)
    put_jobs(plane, [job_value("emails", "job-1"), dead_job("emails", "dead-1"), dead_job("team/emails", "a/b")])
    raw_put(board.db, "queue_dlq:emails", "line\nbreak", dead_job("emails", "line\nbreak").to_value())
    put_runs(plane, [run_value("run-1", status="failed", error=error(), job_id="dead-1"),
                     run_value("cron:nightly:1", module="cron", name="nightly", started=now_ms() - 5000)])
    plane.put("cron", "nightly", {"name": "nightly", "expression": "0 3 * * *"})
    # A topic and a group both called "emails", the plain value beside each hostile one.
    topic = publish(board, "emails", count=3, hostile=True)
    group(board, topic, "emails", handed=1)
    dead(board, topic, "emails", topic.ids[0])
    # A webhook and an endpoint called "emails" too, with a delivery dead and one completed.
    hook = declare(board, "emails", endpoints=("emails",))
    for delivery, is_dead in ((fire(hook, "order.paid")[0], True), (fire(hook, "order.sent")[0], False)):
        attempt(board, hook, delivery, status="failed" if is_dead else "completed", http=500 if is_dead else 200)
        settle(board, hook, delivery, dead=is_dead)
    # A cache called "emails" too, with a tag.
    Cache("emails", ttl=60, tags=["emails"], engine=board.scope.engine).set("emails:1", {"n": 1})
    RateLimiter("emails", limit=2, period=60, ban=(1, 60, 60), engine=board.scope.engine).check("emails")


def check(client: Client, method: str, url: str, failures: list[str], **extra: object) -> str:
    response = getattr(client, method)(url, **extra)
    if response.status_code >= 500:
        failures.append(f"{method.upper()} {url[:120]} -> {response.status_code}")
    if response.status_code != 200 or response.streaming:
        return ""
    return response.content.decode(errors="replace")


@pytest.fixture
def fuzz_board(board: Board) -> Iterator[Board]:
    """The board, seeded, its operator a superuser (operates and sees the admin too)."""
    seed(board)
    admin = get_user_model().objects.create_superuser(f"root-{board.db.project[-6:]}", password="pw")
    board.operator.force_login(admin)
    try:
        yield board
    finally:
        board.operator.logout()
        admin.delete()


def templates() -> list[str]:
    found = [t for t, name in patterns() if name not in SKIP]
    assert any("<" not in t and "{}" in t for t in found)  # the walk saw parameters
    return found


@pytest.mark.parametrize("shared_db", ["postgres"], indirect=True)
def test_no_url_answers_5xx(fuzz_board: Board):
    failures: list[str] = []
    for template in templates():
        for url in urls_of(template):
            for client in (fuzz_board.operator, fuzz_board.viewer):
                check(client, "get", url, failures)
                check(client, "post", url, failures)
    assert not failures, "\n".join(failures[:40])


@pytest.mark.parametrize("shared_db", ["postgres"], indirect=True)
def test_no_filter_answers_5xx(fuzz_board: Board):
    board, failures = fuzz_board, []
    pages = {}
    for template in templates():
        if "{}" not in template:
            url = "/" + template
            pages[url] = check(board.operator, "get", url, failures)
    for url in (reverse("oqronboard:queue-jobs", args=["team/emails"]), reverse("oqronboard:cron-history",
                                                                                args=["nightly"]),
                reverse("oqronboard:job", args=["emails", "line\nbreak"]), reverse("oqronboard:run", args=["run-1"]),
                reverse("oqronboard:topic-log", args=["emails"]), reverse("oqronboard:group-replay", args=["emails",
                                                                                                           "emails"]),
                reverse("oqronboard:topic-message", args=["emails",
                                                          board.plane.list("topic_msg:emails").records[0].id])):
        response = board.operator.get(url)
        assert response.status_code == 200, url  # the seeded rows, odd names included, are reachable
        pages[url] = response.content.decode()
    assert sum(1 for body in pages.values() if body) >= 14, sorted(pages)
    for url, body in pages.items():
        keys = {a or b for a, b in KEYS_IN_HTML.findall(body)} - {"csrfmiddlewaretoken"} | set(ALWAYS_KEYS)
        for value in QUERY_VALUES:
            check(board.viewer, "get", f"{url}?" + "&".join(f"{key}={value}" for key in sorted(keys)), failures)
            # One key at a time on the board's pages (one bad filter would hide the rest);
            # the admin validates its few filters all at once.
            for key in sorted(keys) if value in KEY_VALUES and not url.startswith("/admin/") else ():
                check(board.viewer, "get", f"{url}?{key}={value}", failures, HTTP_HX_REQUEST="true")
            form = "&".join(f"{key}={value}" for key in sorted(keys))
            check(board.operator, "post", url, failures, data=form,
                  content_type="application/x-www-form-urlencoded")
    assert not failures, "\n".join(failures[:40])

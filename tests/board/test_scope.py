"""The project/environment switcher: rows of another scope never leak into a page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from oqronkit.contrib.django import engine
from tests.board.seed import (
    Board,
    dead_job,
    error,
    grant,
    job_value,
    put_jobs,
    put_runs,
    queue_control,
    run_value,
)


@pytest.fixture
def other(board: Board):
    """A second scope in the same database, with rows that must never show elsewhere."""
    plane = engine.durable_for("other-shop", "production")
    queue_control(plane, "secret-queue")
    put_jobs(plane, [job_value("secret-queue", "secret-job"), dead_job("emails", "secret-dead")])
    put_runs(plane, [run_value("secret-run", status="failed", error=error("secret failure"))])
    plane.put("audit", "0000000000001-aa", {"id": "0000000000001-aa", "at": 1, "user": "secret-user",
                                            "action": "retry", "ids": [], "idCount": 0, "ok": True, "result": "x"})
    # The operator may see it and act there (a production environment: its permission too).
    grant(board.users["operator"], "other-shop/production", operate=True, production=True)
    # And the board's own scope has its own rows.
    queue_control(board.plane, "emails")
    put_jobs(board.plane, [dead_job("emails", "mine-dead")])
    put_runs(board.plane, [run_value("mine-run", status="failed", error=error("my failure"))])
    return plane


PAGES = ["home", "runs", "failed-runs", "dead-letters", "definitions", "audit", "queues"]


def test_pages_show_only_the_current_scope(board: Board, other):
    for name in PAGES:
        body = board.operator.get(reverse(f"oqronboard:{name}")).content.decode()
        assert "secret" not in body, name
    assert b"mine-dead" in board.operator.get(reverse("oqronboard:dead-letters")).content
    assert board.operator.get(reverse("oqronboard:run", args=["secret-run"])).status_code == 404
    assert board.operator.get(reverse("oqronboard:job", args=["emails", "secret-dead"])).status_code == 404
    assert board.operator.get(reverse("oqronboard:jump"), {"id": "secret-run"}).status_code == 404
    # An action on another scope's job finds nothing and changes nothing.
    assert board.operator.post(reverse("oqronboard:job-action", args=["emails", "secret-dead",
                                                                      "retry"])).status_code == 404
    assert other.get("queue_dlq:emails", "secret-dead") is not None
    export = b"".join(board.operator.get(reverse("oqronboard:dead-export"), {"format": "json"}).streaming_content)
    assert b"secret" not in export


def test_switching_scope_shows_that_scope_only(board: Board, other):
    page = board.operator.get(reverse("oqronboard:home")).content.decode()
    assert 'value="other-shop/production"' in page and f'value="{board.scope.key}" selected' in page
    assert 'data-testid="env-badge"' in page and "env-production" not in page

    response = board.operator.post(reverse("oqronboard:switch-scope"), {"scope": "other-shop/production",
                                                                        "next": "/dead/"})
    assert response.status_code == 302 and response["Location"] == "/dead/"
    dead_page = board.operator.get(reverse("oqronboard:dead-letters")).content.decode()
    assert "secret-dead" in dead_page and "mine-dead" not in dead_page
    assert "env-production" in dead_page  # production wears the warning colour
    for name in PAGES:
        assert "mine-" not in board.operator.get(reverse(f"oqronboard:{name}")).content.decode(), name
    assert b"secret failure" in board.operator.get(reverse("oqronboard:failed-runs")).content
    # Actions act in the chosen scope, through the engine.
    board.operator.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:secret-dead"]})
    assert other.get("queue_job:emails", "secret-dead") is not None
    assert board.plane.get("queue_dlq:emails", "mine-dead") is not None
    # The viewer's session is its own: still on the configured scope.
    assert b"mine-dead" in board.viewer.get(reverse("oqronboard:dead-letters")).content


def test_unknown_or_malformed_scopes_are_refused(board: Board, other):
    for value in ("nobody/production", "bad scope", "a/b/c", ""):
        response = board.operator.post(reverse("oqronboard:switch-scope"), {"scope": value})
        assert response.status_code == 400, value
    assert b"mine-run" in board.operator.get(reverse("oqronboard:runs")).content

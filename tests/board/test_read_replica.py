"""The board's read replica (oqronboard/base/replica.py) against a real streaming replica.

A throwaway primary and its hot standby (tests/replica_pair.py) serve one test session.
The engine writes to the primary; the board's list and detail pages read the standby
through the ``oqron_read`` alias, and fall back to the primary (with a banner) when it
lags or dies, never with a 500.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import DEFAULT_DB_ALIAS, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from oqronboard import standalone
from oqronboard.base.conf import READ_URL_VARIABLE
from oqronboard.base.replica import PIN_COOKIE, ReadReplicaRouter, check_read_replica
from oqronboard.base.replica_lag import forget
from oqronboard.base.roles import OPERATORS_GROUP, VIEWERS_GROUP
from oqronboard.models import ensure_board_groups
from oqronkit import DurablePlane
from oqronkit.contrib.django import engine
from oqronkit.contrib.django.databases import django_database
from tests.board.seed import job_value, put_jobs, put_runs, queue_control, run_value
from tests.replica_pair import ReplicaPair, replica_pair

ROOT = Path(__file__).resolve().parents[2]
PRIMARY = "replica_primary"
REPLICA = standalone.READ_ALIAS


@pytest.fixture(scope="session")
def pair() -> Iterator[ReplicaPair]:
    with replica_pair() as started:
        yield started


@dataclass
class ReplicaBoard:
    pair: ReplicaPair
    plane: DurablePlane
    operator: Client
    viewer: Client


def _register(alias: str, database: dict[str, Any] | None) -> None:
    """Add a database alias at run time (the test settings know neither server's port)."""
    assert database is not None
    databases = {DEFAULT_DB_ALIAS: dict(connections.settings[DEFAULT_DB_ALIAS]), alias: database}
    connections.settings[alias] = connections.configure_settings(databases)[alias]


def _unregister(alias: str) -> None:
    connections[alias].close()
    del connections[alias]
    del connections.settings[alias]


@pytest.fixture
def rboard(request: pytest.FixtureRequest, pair: ReplicaPair, settings: Any, django_db_blocker: Any,
           scope_names: tuple[str, str]) -> Iterator[ReplicaBoard]:
    request.getfixturevalue("default_test_database")
    _register(PRIMARY, django_database(pair.primary.url))
    # Exactly what settings.py derives from OQRON_READ_DATABASE_URL (timeouts, keepalives).
    _register(REPLICA, standalone.read_database({READ_URL_VARIABLE: pair.replica.url}))
    project, environment = scope_names
    settings.OQRON = {"MODE": "postgres", "DATABASE_ALIAS": PRIMARY, "PROJECT": project, "ENVIRONMENT": environment}
    settings.OQRON_READ_DATABASE_ALIAS = REPLICA
    # Measured on every request unless a test says otherwise.
    settings.OQRON_READ_REPLICA_CHECK_SECONDS = 0
    settings.OQRON_READ_REPLICA_MAX_LAG_SECONDS = 30
    settings.OQRON_READ_PIN_SECONDS = 5
    forget()
    users = get_user_model()
    with django_db_blocker.unblock():
        ensure_board_groups()
        operator = users.objects.create_user(f"olivia-{project[-6:]}", password="pw")
        operator.groups.add(Group.objects.get(name=OPERATORS_GROUP))
        viewer = users.objects.create_user(f"victor-{project[-6:]}", password="pw")
        viewer.groups.add(Group.objects.get(name=VIEWERS_GROUP))
        clients = Client(), Client()
        clients[0].force_login(operator)
        clients[1].force_login(viewer)
        try:
            yield ReplicaBoard(pair, engine.get_durable(), *clients)
        finally:
            engine.reset()
            _unregister(PRIMARY)
            _unregister(REPLICA)
            users.objects.filter(pk__in=[operator.pk, viewer.pk]).delete()
            forget()


def durable_queries(captured: CaptureQueriesContext) -> list[str]:
    """The statements that read the engine's tables (not the lag check's WAL positions)."""
    return [q["sql"] for q in captured.captured_queries if "oqron_" in q["sql"]]


def get_page(client: Client, url: str) -> tuple[str, list[str], list[str]]:
    """A page's body and its durable-table queries on the replica and on the primary."""
    with CaptureQueriesContext(connections[REPLICA]) as on_replica, \
            CaptureQueriesContext(connections[PRIMARY]) as on_primary:
        response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    return response.content.decode(), durable_queries(on_replica), durable_queries(on_primary)


def test_list_and_detail_pages_read_the_replica_and_show_its_lag(rboard: ReplicaBoard):
    put_runs(rboard.plane, [run_value("r-seen", status="failed")])
    put_jobs(rboard.plane, [job_value("emails", "j-seen")])
    rboard.pair.wait_caught_up()
    pages = ("home", "runs", "failed-runs", "queues", "dead-letters", "definitions", "schedules", "topics",
             "webhooks", "logs", "limits", "caches", "audit")
    for url in (*(reverse(f"oqronboard:{name}") for name in pages), reverse("oqronboard:run", args=["r-seen"]),
                reverse("oqronboard:queue-jobs", args=["emails"]), reverse("oqronboard:job", args=["emails",
                                                                                                   "j-seen"])):
        body, on_replica, on_primary = get_page(rboard.viewer, url)
        assert on_replica and not on_primary, (url, on_primary)
        lag = re.search(r'data-testid="replica-status">Read replica, lag (\d+\.\d) s<', body)
        assert lag and float(lag.group(1)) < 1.0, body[-1500:]
        assert 'data-testid="replica-banner"' not in body
    assert "r-seen" in get_page(rboard.viewer, reverse("oqronboard:runs"))[0]


def test_a_row_only_the_primary_holds_shows_once_the_lag_passes_the_limit(rboard: ReplicaBoard, settings: Any):
    put_runs(rboard.plane, [run_value("r-early")])
    rboard.pair.wait_caught_up()
    rboard.pair.pause_replay()
    try:
        put_runs(rboard.plane, [run_value("r-late")])
        body, on_replica, _ = get_page(rboard.viewer, reverse("oqronboard:runs"))
        # The standby has not replayed r-late: the page read it, not the primary.
        assert "r-early" in body and "r-late" not in body and on_replica
        time.sleep(0.4)
        settings.OQRON_READ_REPLICA_MAX_LAG_SECONDS = 0.2
        body, on_replica, on_primary = get_page(rboard.viewer, reverse("oqronboard:runs"))
        assert "r-late" in body and on_primary and not on_replica
        assert 'data-testid="replica-banner"' in body and "(more than 0.2 s)" in body
        assert "Primary database (replica lag" in body
    finally:
        rboard.pair.resume_replay()


def test_an_action_writes_the_primary_and_pins_the_browser_to_it(rboard: ReplicaBoard, settings: Any):
    queue_control(rboard.plane, "emails")
    rboard.pair.wait_caught_up()
    with CaptureQueriesContext(connections[REPLICA]) as on_replica:
        response = rboard.operator.post(reverse("oqronboard:queue-pause", args=["emails"]))
    assert response.status_code == 302 and PIN_COOKIE in response.cookies
    # A standby refuses every write: the action and its audit record went to the primary.
    assert on_replica.captured_queries == []
    assert rboard.plane.get("queue", "emails").value["paused"] is True
    body, on_replica_q, on_primary = get_page(rboard.operator, reverse("oqronboard:definitions"))
    assert on_primary and not on_replica_q and "Primary database (right after your action)" in body
    body, _, on_primary = get_page(rboard.operator, reverse("oqronboard:audit"))
    assert "pause" in body and on_primary
    # Once the pin expires, the same browser reads the replica again.
    rboard.operator.cookies[PIN_COOKIE] = "0"
    rboard.pair.wait_caught_up()
    body, on_replica_q, on_primary = get_page(rboard.operator, reverse("oqronboard:definitions"))
    assert on_replica_q and not on_primary and "Read replica, lag" in body


def test_the_replica_stopped_mid_test_pages_answer_from_the_primary(rboard: ReplicaBoard, settings: Any,
                                                                   caplog: pytest.LogCaptureFixture):
    put_runs(rboard.plane, [run_value("r-kept")])
    rboard.pair.wait_caught_up()
    # The check says healthy and is believed for a minute: the replica dies under the next page.
    settings.OQRON_READ_REPLICA_CHECK_SECONDS = 60
    assert "Read replica, lag" in get_page(rboard.viewer, reverse("oqronboard:runs"))[0]
    rboard.pair.replica._pg_ctl("-m", "immediate", "stop")
    try:
        for attempt in range(2):
            # First the page fails on the replica and is rendered again on the primary; then the
            # failure is remembered and the replica is not tried at all.
            caplog.clear()
            with CaptureQueriesContext(connections[PRIMARY]) as on_primary:
                response = rboard.viewer.get(reverse("oqronboard:runs"))
            retried = [r for r in caplog.records if getattr(r, "action", "") == "board.replica_retry"]
            assert len(retried) == (1 if attempt == 0 else 0)
            body = response.content.decode()
            assert response.status_code == 200 and "r-kept" in body and durable_queries(on_primary)
            assert 'data-testid="replica-banner"' in body and "read replica is unavailable" in body
            assert "Primary database (replica down)" in body
        # Measured afresh: the connection is refused, the page still answers.
        settings.OQRON_READ_REPLICA_CHECK_SECONDS = 0
        # A page that reads no durable table never asks the replica (the route is chosen lazily).
        caplog.clear()
        assert Client().get(reverse("login")).status_code == 200
        assert not [r for r in caplog.records if getattr(r, "action", "").startswith("board.replica")]
        response = rboard.viewer.get(reverse("oqronboard:job", args=["emails", "nope"]))
        assert response.status_code == 404
        response = rboard.viewer.get(reverse("oqronboard:runs"))
        assert response.status_code == 200 and b"read replica is unavailable" in response.content
    finally:
        rboard.pair.replica.start()
        rboard.pair.wait_caught_up()


def test_nothing_is_migrated_on_the_replica_and_a_bad_url_fails_the_check(settings: Any, monkeypatch):
    settings.OQRON_READ_DATABASE_ALIAS = REPLICA
    router = ReadReplicaRouter()
    assert router.allow_migrate(REPLICA, "auth") is False
    assert router.allow_migrate(DEFAULT_DB_ALIAS, "auth") is None
    settings.OQRON_READ_DATABASE_ALIAS = None
    monkeypatch.setenv(READ_URL_VARIABLE, "sqlite:///replica.sqlite3")
    assert standalone.read_database({READ_URL_VARIABLE: "sqlite:///x"}) is None
    assert [m.id for m in check_read_replica()] == ["oqron.E020"]
    read = standalone.read_database({READ_URL_VARIABLE: "postgresql://u@db.internal:5433/board"})
    assert read is not None and read["PORT"] == "5433" and read["OPTIONS"]["connect_timeout"] == 2
    assert read["TEST"] == {"MIRROR": "default"}


def manage_check(**env: str) -> subprocess.CompletedProcess[str]:
    """``manage.py check`` with the project's own settings and ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OQRON_", "DJANGO_"))}
    clean.pop("PYTHONPATH", None)
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True,
                          env={**clean, "DJANGO_SETTINGS_MODULE": "oqronboard.settings", **env}, timeout=60)


def test_manage_check_accepts_a_postgres_replica_and_names_a_bad_one():
    primary = {"OQRON_MODE": "postgres", "OQRON_DATABASE_URL": "postgresql://postgres@127.0.0.1:5432/test"}
    ok = manage_check(**primary, OQRON_READ_DATABASE_URL="postgresql://postgres@127.0.0.1:5432/test")
    assert ok.returncode == 0, ok.stderr
    bad = manage_check(**primary, OQRON_READ_DATABASE_URL="sqlite:///replica.sqlite3")
    assert bad.returncode != 0 and "oqron.E020" in bad.stderr
    on_sqlite = manage_check(OQRON_READ_DATABASE_URL="postgresql://postgres@127.0.0.1:5432/test")
    assert on_sqlite.returncode != 0 and "PostgreSQL on both sides" in on_sqlite.stderr

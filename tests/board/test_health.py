"""/health/live and /health/ready: no login, JSON, each plane down or hanging answered
503 within a second, and nothing of the configuration revealed."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
from django.test import Client

from oqronkit.contrib.django import engine
from tests.board.conftest import SharedDatabase
from tests.dedicated import free_port
from tests.services import require_redis


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never answers: a hung server."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()


def ready(expect: int) -> dict:
    started = time.monotonic()
    response = Client().get("/health/ready")
    elapsed = time.monotonic() - started
    assert response.status_code == expect, response.content
    assert response["Content-Type"] == "application/json" and elapsed < 1.0, elapsed
    return response.json()


def test_live_needs_no_login_and_touches_no_plane(settings, database_alias):
    alias = database_alias(f"postgresql://nobody@127.0.0.1:{free_port()}/x")
    settings.OQRON = {"MODE": "postgres", "DATABASE_ALIAS": alias}
    response = Client().get("/health/live")
    assert response.status_code == 200 and response.json() == {"status": "live"}
    assert Client().post("/health/live").status_code == 405


def test_ready_when_both_planes_answer(shared_db: SharedDatabase):
    assert ready(200) == {"status": "ready", "checks": {"durable": "ok", "hot": "ok"}}


def test_durable_plane_down(settings, database_alias):
    port = free_port()
    alias = database_alias(f"postgresql://secret-user:pw@127.0.0.1:{port}/db")
    settings.OQRON = {"MODE": "postgres", "DATABASE_ALIAS": alias}
    body = ready(503)
    # Refused at once; the driver's pool keeps retrying, so the probe may also time out.
    assert body["status"] == "not ready" and body["checks"]["durable"] in ("down", "timeout")
    assert "secret" not in str(body) and str(port) not in str(body)


def test_durable_plane_hanging(silent_port: int, settings, database_alias):
    settings.OQRON = {"MODE": "postgres", "DATABASE_ALIAS": database_alias(f"postgresql://u@127.0.0.1:{silent_port}/db")}
    # Postgres holds both planes here: the hot plane waits on the same hung server.
    assert ready(503)["checks"] == {"durable": "timeout", "hot": "timeout"}


def test_hot_plane_down_and_hanging(settings, pg_schema_url: str, silent_port: int, database_alias):
    require_redis()
    closed = free_port()
    alias = database_alias(pg_schema_url)
    settings.OQRON = {"MODE": "redis-postgres", "DATABASE_ALIAS": alias,
                      "REDIS_URL": f"redis://127.0.0.1:{closed}/0"}
    engine.get_durable()  # created beforehand, as a served board has: schema creation takes longer than a probe
    assert ready(503)["checks"] == {"durable": "ok", "hot": "down"}
    settings.OQRON = {"MODE": "redis-postgres", "DATABASE_ALIAS": alias,
                      "REDIS_URL": f"redis://127.0.0.1:{silent_port}/0"}
    engine.get_durable()
    assert ready(503)["checks"] == {"durable": "ok", "hot": "timeout"}
    # The next probe waits on the one in flight rather than starting another thread.
    threads = threading.active_count()
    assert ready(503)["checks"]["hot"] == "timeout" and threading.active_count() <= threads + 1


def test_a_bad_configuration_is_not_ready(settings):
    settings.OQRON = {"MODE": "nonsense"}
    assert ready(503) == {"status": "not ready", "checks": {"config": "invalid"}}


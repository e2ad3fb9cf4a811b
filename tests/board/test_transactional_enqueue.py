"""``queue.add`` inside ``transaction.atomic()`` joins the host's transaction.

In sqlite and postgres modes the job (its durable row and its hot-plane signal, both
tables of the alias's database) commits with the host's rows, is gone when they roll
back, and no worker sees it before the commit. In redis-postgres mode the durable row
rides in the transaction and the Redis signal is sent on commit. Each mode on the real
database: the SQLite test database, a private Postgres schema, Redis.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import IntegrityError, connections, transaction
from django.test import Client, override_settings
from django.urls import path

import oqronkit
from oqronkit.contrib.django import engine
from tests.board.conftest import SharedDatabase
from tests.services import REDIS_URL, require_redis

FAR = 10**13  # a "now" past every run_at: delayed jobs count as ready


class Boom(Exception):
    pass


@pytest.fixture(params=[
    # The engine writes through its own connection too: no wrapping test transaction on SQLite.
    pytest.param("sqlite", marks=pytest.mark.django_db(transaction=True)), "postgres", "redis-postgres"])
def db(request: pytest.FixtureRequest, settings: Any) -> Iterator[SharedDatabase]:
    """The engine on the alias the ORM uses, in each mode that keeps its durable rows in SQL."""
    if request.param == "redis-postgres":
        require_redis()
        shared: SharedDatabase = request.getfixturevalue("pg_shared_db")
        settings.OQRON = {**settings.OQRON, "MODE": "redis-postgres", "REDIS_URL": REDIS_URL}
        yield SharedDatabase(shared.alias, engine.get_durable(), shared.project, shared.environment)
        return
    fixture = "sqlite_shared_db" if request.param == "sqlite" else "pg_shared_db"
    shared = request.getfixturevalue(fixture)
    engine.get_engine().hot  # noqa: B018  (its tables made, as `migrate` makes them in a project)
    yield shared


@pytest.fixture
def pg_shared_db(request: pytest.FixtureRequest) -> SharedDatabase:
    from tests.board.conftest import _shared

    url = request.getfixturevalue("board_pg_url")
    request.getfixturevalue("default_test_database")
    generator = _shared("postgres", url, "postgres", request.getfixturevalue("settings"),
                        request.getfixturevalue("django_db_blocker"), request.getfixturevalue("scope_names"))
    shared = next(generator)
    request.addfinalizer(lambda: next(generator, None))
    return shared


def queue(name: str = "tx-emails") -> oqronkit.Queue:
    return oqronkit.queue(name)


def stored(db: SharedDatabase, job: oqronkit.Job) -> bool:
    """Whether the job's row is visible to anyone but the open transaction (the engine's own connection)."""
    return engine.get_durable().get(job.namespace, job.id) is not None


def signalled(name: str = "tx-emails") -> int:
    """Jobs a worker could claim now: the hot plane seen from the engine's own connection."""
    return engine.get_engine().hot.depths(name, FAR).ready


def test_a_committed_add_is_stored_and_signalled_after_the_commit(db: SharedDatabase):
    with transaction.atomic(using=db.alias):
        job = queue().add({"to": "a@example.com"})
        assert not stored(db, job) and signalled() == 0  # nothing a worker could see yet
    assert stored(db, job) and signalled() == 1


def test_a_rolled_back_add_leaves_nothing(db: SharedDatabase):
    with pytest.raises(Boom), transaction.atomic(using=db.alias):
        job = queue().add({"to": "a@example.com"})
        raise Boom
    assert not stored(db, job) and signalled() == 0


def test_a_savepoint_rolled_back_takes_only_its_own_jobs(db: SharedDatabase):
    with transaction.atomic(using=db.alias):
        kept = queue().add({"n": 1})
        with pytest.raises(Boom), transaction.atomic(using=db.alias):
            dropped = queue().add({"n": 2})
            raise Boom
    assert stored(db, kept) and not stored(db, dropped)
    assert signalled() == 1


def test_bulk_adds_and_dependencies_see_the_transactions_own_jobs(db: SharedDatabase):
    with transaction.atomic(using=db.alias):
        parents = queue().add_bulk([{"n": n} for n in range(3)])  # the plain bulk path (COPY on Postgres)
        child = queue().add({"n": 9}, depends_on=[p.id for p in parents])  # parents not yet committed
        assert child.status == "waiting-dependencies"
    assert all(stored(db, j) for j in (*parents, child))
    assert signalled() == 3  # the child waits for its parents


def test_a_failed_add_leaves_the_host_transaction_usable(db: SharedDatabase):
    with transaction.atomic(using=db.alias):
        with pytest.raises(oqronkit.InvalidJob):
            queue().add({"bad": "\x00"})  # refused by the engine or the database
        job = queue().add({"n": 1})
    assert stored(db, job)


def test_outside_a_transaction_an_add_commits_at_once(db: SharedDatabase):
    job = queue().add({"n": 1})
    assert stored(db, job) and signalled() == 1


SEEN: list[Any] = []
WORKED = oqronkit.queue("tx-worked", handler=lambda ctx: SEEN.append(ctx.data))


def test_a_worker_runs_the_job_once_committed(db: SharedDatabase):
    SEEN.clear()
    with transaction.atomic(using=db.alias):
        WORKED.add({"n": 1})
        assert engine.get_engine().hot.depths("tx-worked", FAR).ready == 0
    from oqronkit.worker.process import WorkerProcess

    WorkerProcess(engine.get_engine(), queues=["tx-worked"], burst=True, poll_interval=0.05).run()
    assert SEEN == [{"n": 1}]


def test_enqueued_listeners_hear_only_committed_jobs(db: SharedDatabase):
    heard: list[str] = []

    def listener(event: Any) -> None:
        heard.append(event.job.id)

    oqronkit.on("enqueued", listener)
    try:
        with pytest.raises(Boom), transaction.atomic(using=db.alias):
            queue().add({"n": 1})
            raise Boom
        assert heard == []
        with transaction.atomic(using=db.alias):
            job = queue().add({"n": 2})
            assert heard == []
        assert heard == [job.id]
    finally:
        from oqronkit.queues.queue import default_registry

        default_registry.listeners.remove("enqueued", listener)


# -- a host's view that raises: its atomic block takes the job with it ----------------------


def _view(request: Any) -> Any:
    from django.http import HttpResponse

    alias = engine.database_alias()
    with transaction.atomic(using=alias):
        job = queue().add({"order": request.GET["order"]})
        if request.GET.get("fail"):
            raise IntegrityError("the order row conflicts")
    return HttpResponse(job.id)


urlpatterns = [path("order/", _view)]


@override_settings(ROOT_URLCONF=__name__)
def test_an_exception_in_the_hosts_view_rolls_the_job_back(db: SharedDatabase, admin_user: Any):
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)
    assert client.get("/order/", {"order": "1", "fail": "1"}).status_code == 500
    assert signalled() == 0 and engine.get_durable().count("queue_job:tx-emails") == 0
    response = client.get("/order/", {"order": "2"})
    assert response.status_code == 200
    assert engine.get_durable().get("queue_job:tx-emails", response.content.decode()) is not None
    assert signalled() == 1


def test_the_database_alias_stays_the_hosts(db: SharedDatabase):
    # The engine wrote through the alias's own connection: nothing left open on it.
    with transaction.atomic(using=db.alias):
        queue().add({"n": 1})
    assert not connections[db.alias].in_atomic_block

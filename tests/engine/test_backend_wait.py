"""The backend_wait setting: validated, read from OQRON_BACKEND_WAIT, and bounding how
long a call waits for an unreachable Postgres or Redis before BackendUnavailable."""

from __future__ import annotations

import math
import threading
import time

import pytest

from oqronkit import ConfigurationError, Engine, OqronConfig, Registry, config_from_env, config_from_mapping
from oqronkit.backends.postgres import PostgresDurableStore
from oqronkit.backends.redis import RedisHotPlane
from oqronkit.config import DEFAULT_BACKEND_WAIT_S
from oqronkit.errors import BackendUnavailable
from oqronkit.reachable import until_reachable
from oqronkit.worker import WorkerProcess
from tests.dedicated import free_port


def test_default_and_valid_values():
    assert OqronConfig().backend_wait == DEFAULT_BACKEND_WAIT_S == 5.0
    assert OqronConfig(backend_wait=0.5).backend_wait == 0.5
    assert OqronConfig(backend_wait=300).backend_wait == 300


@pytest.mark.parametrize("value", [0, -1, 301, math.inf, math.nan, True, "5", None])
def test_bad_values_are_refused(value):
    with pytest.raises(ConfigurationError, match="OQRON backend_wait must be a number of seconds"):
        OqronConfig(backend_wait=value)


def test_mapping_and_environment():
    assert config_from_mapping({"BACKEND_WAIT": 2}).backend_wait == 2
    assert config_from_env({"OQRON_BACKEND_WAIT": "1.5"}).backend_wait == 1.5
    with pytest.raises(ConfigurationError, match="OQRON_BACKEND_WAIT must be a number of seconds, got 'soon'"):
        config_from_env({"OQRON_BACKEND_WAIT": "soon"})
    with pytest.raises(ConfigurationError, match="OQRON backend_wait"):
        config_from_env({"OQRON_BACKEND_WAIT": "0"})


def test_an_unreachable_postgres_fails_within_the_wait():
    store = PostgresDurableStore(f"postgresql://postgres@127.0.0.1:{free_port()}/none", connect_timeout=1.0)
    started = time.monotonic()
    with pytest.raises(BackendUnavailable, match="unreachable after 1s"):
        store.ensure_schema()
    assert time.monotonic() - started < 3.0
    store.close()


def test_an_unreachable_redis_fails_within_the_wait():
    plane = RedisHotPlane(f"redis://127.0.0.1:{free_port()}/0", connect_timeout=1.0, read_retries=0)
    started = time.monotonic()
    with pytest.raises(BackendUnavailable, match="Redis at"):
        plane.ensure_ready()
    assert time.monotonic() - started < 3.0
    plane.close()


@pytest.mark.parametrize("mode", ["redis", "redis-postgres"])
def test_a_worker_starting_while_redis_restarts_waits_for_it(mode, request):
    """A refused connection fails at once, so a worker starting during a Redis restart
    retries within backend_wait instead of exiting (seen in the suite: a worker's
    start-up met the restart in tests/processes/test_faults.py)."""
    from tests.dedicated import dedicated_redis

    pg_url = request.getfixturevalue("pg_schema_url") if mode == "redis-postgres" else None
    with dedicated_redis() as server:
        server.stop()
        timer = threading.Timer(1.0, server.start)
        timer.start()
        engine = Engine(OqronConfig(mode=mode, database_url=pg_url, redis_url=server.url, backend_wait=5.0,
                                    project=f"wait-{mode}"), registry=Registry())
        engine.queue("q")
        worker = WorkerProcess(engine, burst=True)
        try:
            started = time.monotonic()
            worker.start()
            assert 0.8 < time.monotonic() - started < 4.5
            job = engine.get_queue("q").add({"i": 1})
            assert engine.hot.present("q", [job.id]) == {job.id}
        finally:
            worker.request_stop()
            worker.stop(drain_timeout=5)
            timer.join()
            engine.close()


def test_until_reachable_gives_up_after_its_budget():
    calls = []

    def refused():
        calls.append(time.monotonic())
        raise BackendUnavailable("refused (test)")

    started = time.monotonic()
    with pytest.raises(BackendUnavailable, match="refused"):
        until_reachable(1.0, refused)
    assert 0.9 < time.monotonic() - started < 2.0 and len(calls) >= 4
    # An interactive open still fails at once (the board's probes tell down from hung).
    engine = Engine(OqronConfig(mode="redis", database_url=None, redis_url=f"redis://127.0.0.1:{free_port()}/0",
                                backend_wait=5.0), registry=Registry())
    started = time.monotonic()
    with pytest.raises(BackendUnavailable, match="Redis at"):
        engine.queue("q").add({"i": 1})
    assert time.monotonic() - started < 2.0
    engine.close()

"""Habit 1: the engine imports no Django, and no driver until a backend needs it; a
worker imports only what its mode and its queues' features need (issue 36: each unused
package is megabytes of resident memory in every worker process).

Each check runs in a fresh interpreter: this test process has Django loaded already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.services import drop_redis_project, require_postgres, require_redis, unique_name, with_search_path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("django", "psycopg", "psycopg_pool", "redis", "django_redis", "httpx", "httpcore")
#: What no worker of sync handlers needs unless its mode's driver brings it.
HEAVY = (*FORBIDDEN, "opentelemetry", "asyncio")


def loaded_after(code: str, names: tuple[str, ...] = FORBIDDEN) -> list[str]:
    """The top-level packages out of ``names`` in sys.modules after running ``code``."""
    script = (
        f"{code}\nimport json, sys\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(names)!r}))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_import_oqronkit_loads_no_django_or_driver():
    assert loaded_after("import oqronkit") == []


@pytest.mark.parametrize("mode", ["memory", "sqlite"])
def test_embedded_modes_run_without_any_driver(mode, tmp_path):
    code = (
        "import oqronkit\n"
        f"config = oqronkit.OqronConfig(mode={mode!r}, "
        f"database_url={None if mode == 'memory' else 'sqlite:///' + str(tmp_path / 'x.sqlite3')!r})\n"
        "plane = oqronkit.open_durable(config)\n"
        "plane.put('runs', 'r1', {'status': 'completed'})\n"
        "assert plane.get('runs', 'r1').value == {'status': 'completed'}\n"
        "plane.close()"
    )
    assert loaded_after(code) == []


WORKER = """
import oqronkit
from oqronkit.worker import WorkerProcess
engine = oqronkit.Engine(oqronkit.OqronConfig(mode={mode!r}, database_url={url!r}, redis_url={redis_url!r},
                                              project={project!r}, environment="test"), registry=oqronkit.Registry())
engine.queue("plain", handler=lambda ctx: ctx.data["n"] + 1)
engine.get_queue("plain").add({{"n": 1}})
WorkerProcess(engine, queues=["plain"], burst=True, poll_interval=0.05).run()
assert engine.durable.count("queue_job:plain") == 0, "the job was not run"
engine.close()
"""


def worker_loads(mode: str, url: str | None, redis_url: str | None = None) -> list[str]:
    """The HEAVY packages a worker of ``mode`` (services on) loaded by the time it ran a job."""
    project = unique_name("imports").replace("_", "-")
    try:
        return loaded_after(WORKER.format(mode=mode, url=url, redis_url=redis_url, project=project), HEAVY)
    finally:
        if redis_url:
            drop_redis_project(redis_url, project)


@pytest.mark.parametrize("mode", ["memory", "sqlite"])
def test_an_embedded_worker_loads_no_driver_no_tracing_and_no_asyncio(mode, tmp_path):
    url = None if mode == "memory" else f"sqlite:///{tmp_path / 'w.sqlite3'}"
    assert worker_loads(mode, url) == []


def test_a_postgres_worker_loads_no_redis_django_httpx_or_tracing():
    url = require_postgres()
    schema = unique_name("oqron_imports")
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')  # our own name
    try:
        # asyncio comes with psycopg itself (its async connection classes), not with the engine
        assert worker_loads("postgres", with_search_path(url, schema)) == ["asyncio", "psycopg", "psycopg_pool"]
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def test_a_redis_worker_loads_no_postgres_driver_django_or_httpx():
    loaded = worker_loads("redis", None, require_redis())
    assert "redis" in loaded
    assert not set(loaded) & {"psycopg", "psycopg_pool", "django", "django_redis", "httpx", "httpcore"}


#: The features' modules a worker whose queues declare none of them never loads, its leader
#: services included (what they run for the whole project, scheduler, group sweep, topic
#: retention, operations' dead-letter walk and rollups, is not in this list).
FEATURE_MODULES = ("oqronkit.topics.topic", "oqronkit.topics.subscription", "oqronkit.topics.dispatch",
                   "oqronkit.topics.publish", "oqronkit.webhooks", "oqronkit.caches", "oqronkit.ratelimit",
                   "oqronkit.replay", "oqronkit.cli", "oqronkit.operations.replaying",
                   "oqronkit.operations.resending")

LEADING_WORKER = """
import json, sys, threading, time
import oqronkit
from oqronkit.worker import WorkerProcess
engine = oqronkit.Engine(oqronkit.OqronConfig(mode={mode!r}, database_url={url!r}, redis_url={redis_url!r},
                                              project={project!r}, environment="test"), registry=oqronkit.Registry())
engine.queue("plain", handler=lambda ctx: ctx.data["n"] + 1)
engine.get_queue("plain").add({{"n": 1}})
process = WorkerProcess(engine, queues=["plain"], poll_interval=0.05)
runner = threading.Thread(target=process.run)
runner.start()
deadline = time.monotonic() + 30
while not (process.services is not None and process.services.is_leader
           and engine.durable.count("queue_job:plain") == 0):
    assert time.monotonic() < deadline, "no leader, or the job did not run"
    time.sleep(0.05)
time.sleep(1.0)  # the leader's first round runs every service once
process.request_stop()
runner.join(30)
engine.close()
print(json.dumps(sorted(m for m in sys.modules if m.startswith("oqronkit."))))
"""


def worker_modules(mode: str, url: str | None, redis_url: str | None = None) -> list[str]:
    """The oqronkit modules a leading worker of ``mode`` loaded by the time its job ran and
    its leader services had run once."""
    project = unique_name("features").replace("_", "-")
    code = LEADING_WORKER.format(mode=mode, url=url, redis_url=redis_url, project=project)
    try:
        result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                                timeout=90, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    finally:
        if redis_url:
            drop_redis_project(redis_url, project)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_postgres_worker_loads_no_feature_it_does_not_use():
    url = require_postgres()
    schema = unique_name("oqron_features")
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')  # our own name
    try:
        loaded = worker_modules("postgres", with_search_path(url, schema))
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    assert "oqronkit.services.leader" in loaded  # the services ran
    assert [m for m in loaded if m.startswith(FEATURE_MODULES)] == []


def test_a_redis_worker_loads_no_feature_it_does_not_use():
    loaded = worker_modules("redis", None, require_redis())
    assert "oqronkit.services.leader" in loaded
    assert [m for m in loaded if m.startswith(FEATURE_MODULES)] == []


def test_import_oqronkit_loads_the_features_public_api_on_first_use():
    script = (
        "import sys, oqronkit\n"
        f"features = [m for m in sys.modules if m.startswith({FEATURE_MODULES!r})]\n"
        "assert features == [] and 'oqronkit.engine' in sys.modules, features\n"
        "for name in oqronkit.__all__:\n"
        "    exec(f'from oqronkit import {name}')\n"
        "assert 'oqronkit.webhooks.webhook' in sys.modules and oqronkit.Webhook.__name__ == 'Webhook'\n"
        "assert set(oqronkit.__all__) <= set(dir(oqronkit))\n"
        "try:\n"
        "    oqronkit.no_such_name\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr

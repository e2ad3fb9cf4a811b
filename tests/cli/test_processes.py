"""The CLI as an operator runs it: ``python -m oqronkit`` from OQRON_* variables and
``python manage.py oqron`` from Django's settings, in fresh processes without a terminal
(so confirmations need ``--yes``); a down database; one command in redis-postgres mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from oqronkit import Engine, OqronConfig, Registry
from tests.dedicated import free_port
from tests.services import drop_redis_project, require_postgres, require_redis

from .conftest import audit_entries, seed

ROOT = Path(__file__).resolve().parents[2]


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OQRON_", "DJANGO_"))}
    full = {**clean, "PYTHONPATH": str(ROOT), "USER": "nightowl", "LOGNAME": "nightowl", **env}
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=full, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)


def sqlite_env(tmp_path: Path, project: str) -> dict[str, str]:
    return {"OQRON_MODE": "sqlite", "OQRON_DATABASE_URL": f"sqlite:///{tmp_path / 'oqron.sqlite3'}",
            "OQRON_PROJECT": project}


def test_engine_cli_without_django(tmp_path):
    env = sqlite_env(tmp_path, "proc")
    engine = Engine(OqronConfig(mode="sqlite", database_url=env["OQRON_DATABASE_URL"], project="proc"),
                    registry=Registry())
    try:
        seed(engine)
        listed = run(["-m", "oqronkit", "dead", "--queue", "emails", "--json"], env, tmp_path)
        assert listed.returncode == 0, listed.stderr
        assert [d["id"] for d in json.loads(listed.stdout)["items"]] == ["d-key", "d-boom-2", "d-boom-1"]
        refused = run(["-m", "oqronkit", "delete", "--all", "--queue", "emails"], env, tmp_path)
        assert refused.returncode == 2 and "add --yes" in refused.stderr and "Traceback" not in refused.stderr
        done = run(["-m", "oqronkit", "delete", "--all", "--queue", "emails", "--yes"], env, tmp_path)
        assert done.returncode == 0 and "Deleted 3 of 3 dead letter(s)." in done.stdout
        entry = audit_entries(engine)[0]
        assert (entry["user"], entry["source"], entry["action"], entry["idCount"]) == ("nightowl", "cli", "delete", 3)
        probe = "import sys, oqronkit.cli, oqronkit.runner; print('django' in sys.modules)"
        assert run(["-c", probe], env, tmp_path).stdout.strip() == "False"
    finally:
        engine.close()


@pytest.mark.parametrize("mode", ["sqlite", "postgres"])
def test_manage_py_oqron(tmp_path, mode, request):
    if mode == "sqlite":
        env = sqlite_env(tmp_path, "board")
    else:
        project = f"board-{uuid.uuid4().hex[:8]}"
        env = {"OQRON_MODE": "postgres", "OQRON_DATABASE_URL": request.getfixturevalue("pg_schema_url"),
               "OQRON_PROJECT": project}
    engine = Engine(OqronConfig(mode=mode, database_url=env["OQRON_DATABASE_URL"], project=env["OQRON_PROJECT"]),
                    registry=Registry())
    try:
        seed(engine)
        queues = run([str(ROOT / "manage.py"), "oqron", "queues"], env, tmp_path)
        assert queues.returncode == 0, queues.stderr
        assert queues.stdout.splitlines()[1].split()[:6] == ["emails", "no", "2", "1", "0", "3"]
        paused = run([str(ROOT / "manage.py"), "oqron", "pause", "emails", "--json"], env, tmp_path)
        assert paused.returncode == 0 and json.loads(paused.stdout)["message"] == "Queue emails paused."
        assert paused.stderr == ""  # the engine's INFO lines stay out unless -v 2
        assert audit_entries(engine)[0]["user"] == "nightowl"
        bad = run([str(ROOT / "manage.py"), "oqron", "purge", "emails"], env, tmp_path)
        assert bad.returncode == 2 and "add --yes" in bad.stderr
        usage = run([str(ROOT / "manage.py"), "oqron", "runs", "--since", "soon"], env, tmp_path)
        assert usage.returncode == 2 and "not a duration" in usage.stderr and "Traceback" not in usage.stderr
    finally:
        engine.close()


def test_a_down_database_is_one_line_and_exit_1(tmp_path):
    env = {"OQRON_MODE": "postgres", "OQRON_DATABASE_URL": f"postgresql://postgres@127.0.0.1:{free_port()}/none",
           "OQRON_BACKEND_WAIT": "0.3"}
    done = run(["-m", "oqronkit", "queues", "--json"], env, tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("error: cannot reach a backend") and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["ok"] is False
    django = run([str(ROOT / "manage.py"), "oqron", "dead"], env, tmp_path)
    assert django.returncode == 1 and django.stderr.startswith("error: cannot reach a backend")
    assert len(django.stderr.splitlines()) == 1
    bad_config = run(["-m", "oqronkit", "queues"], {"OQRON_MODE": "postgres", "OQRON_DATABASE_URL": "sqlite:///x"},
                     tmp_path)
    assert bad_config.returncode == 2 and "bad configuration" in bad_config.stderr
    stray = run(["-m", "oqronkit", "queues"], {"OQRON_MODE": "sqlite"}, tmp_path)  # the default relative file
    assert stray.returncode == 1 and "no SQLite database at" in stray.stderr
    assert not (tmp_path / "oqron.sqlite3").exists()  # not created empty by looking
    memory = run(["-m", "oqronkit", "dead", "--mode", "memory"], {}, tmp_path)
    assert memory.returncode == 2 and "keeps jobs inside one process" in memory.stderr


def test_redis_postgres_mode(tmp_path):
    redis_url, pg_url = require_redis(), require_postgres()
    project = f"cli-{uuid.uuid4().hex[:10]}"
    config = OqronConfig(mode="redis-postgres", database_url=pg_url, redis_url=redis_url, project=project)
    engine = Engine(config, registry=Registry())
    env = {"OQRON_MODE": "redis-postgres", "OQRON_DATABASE_URL": pg_url, "OQRON_REDIS_URL": redis_url,
           "OQRON_PROJECT": project}
    try:
        seed(engine)
        done = run(["-m", "oqronkit", "queues", "--json"], env, tmp_path)
        assert done.returncode == 0, done.stderr
        emails = json.loads(done.stdout)["items"][0]
        assert (emails["name"], emails["waiting"], emails["delayed"], emails["dead"]) == ("emails", 2, 1, 3)
        down = run(["-m", "oqronkit", "queues"], {**env, "OQRON_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
                                                  "OQRON_BACKEND_WAIT": "0.3"}, tmp_path)
        assert down.returncode == 1 and down.stderr.startswith("error: cannot reach a backend: Redis at")
    finally:
        for namespace in ("queue_job:emails", "queue_dlq:emails", "queue_dlq:reports", "runs", "queue", "cron",
                          "cron_durable"):
            ids = [r.id for r in engine.durable.list(namespace, limit=100).records]
            engine.durable.delete_many(namespace, ids)
        engine.close()
        drop_redis_project(redis_url, project)

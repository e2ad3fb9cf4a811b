"""oqronboard.engine: the only place Django settings become an OqronConfig."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from oqronboard import engine
from oqronkit import ConfigurationError, DurablePlane, OqronConfig

BASE = Path("/srv/board")


def build(oqron: object = None, **environ: str) -> OqronConfig:
    return engine.build_config(oqron, environ, base_dir=BASE)


# -- build_config ----------------------------------------------------------------------


def test_defaults_use_an_absolute_sqlite_file_beside_manage_py():
    config = build()
    assert config.mode == "sqlite"
    assert config.database_url == "sqlite:////srv/board/oqron.sqlite3"
    assert config.project == "default" and config.environment == "development"
    assert config.acknowledge_v1_layout is False


def test_setting_keys_in_any_case():
    config = build({"MODE": "postgres", "database_url": "postgresql://h/db", "Project": "shop",
                    "ENVIRONMENT": "production", "MAX_RECORD_BYTES": 2048, "ACKNOWLEDGE_V1_LAYOUT": True})
    assert (config.mode, config.database_url, config.project) == ("postgres", "postgresql://h/db", "shop")
    assert config.environment == "production" and config.max_record_bytes == 2048
    assert config.acknowledge_v1_layout is True


def test_environment_overrides_the_setting():
    config = build(
        {"MODE": "sqlite", "PROJECT": "shop"},
        OQRON_MODE="redis-postgres", OQRON_DATABASE_URL="postgresql://h/db",
        OQRON_REDIS_URL="redis://127.0.0.1:6379/2", OQRON_PROJECT="billing", OQRON_ENVIRONMENT="staging",
    )
    assert config.mode == "redis-postgres" and config.redis_url == "redis://127.0.0.1:6379/2"
    assert (config.project, config.environment) == ("billing", "staging")


def test_empty_environment_variables_are_ignored():
    assert build({"PROJECT": "shop"}, OQRON_PROJECT="").project == "shop"


def test_relative_sqlite_paths_are_relative_to_the_project():
    assert build({"DATABASE_URL": "sqlite:///data/x.sqlite3"}).database_url == "sqlite:////srv/board/data/x.sqlite3"
    assert build(OQRON_DATABASE_URL="sqlite:////abs/x.sqlite3").database_url == "sqlite:////abs/x.sqlite3"


def test_memory_and_redis_modes_need_no_database():
    assert build({"MODE": "memory"}).database_url is None
    assert build(OQRON_MODE="redis", OQRON_REDIS_URL="redis://h:6379/0").mode == "redis"


@pytest.mark.parametrize(
    ("oqron", "environ", "message"),
    [
        ("sqlite", {}, "must be a dict"),
        ({"MODE": "bogus"}, {}, "OQRON mode 'bogus'"),
        ({"NOPE": 1}, {}, "Unknown OQRON setting 'NOPE'"),
        ({"DATABASE_URL": 5}, {}, "database_url must be a URL string"),
        ({"ACKNOWLEDGE_V1_LAYOUT": "false"}, {}, "acknowledge_v1_layout must be True or False"),
        ({"MAX_RECORD_BYTES": 0}, {}, "max_record_bytes must be a positive integer"),
        ({}, {"OQRON_PROJECT": "a b"}, "OQRON project 'a b'"),
        ({}, {"OQRON_MODE": "postgres"}, "does not suit mode 'postgres'"),
        ({}, {"OQRON_MODE": "redis"}, "needs a Redis URL"),
    ],
)
def test_bad_values_raise_configuration_error(oqron, environ, message):
    with pytest.raises(ConfigurationError, match=message):
        build(oqron, **environ)


# -- database_settings -------------------------------------------------------------------


def test_sqlite_database_is_the_engine_file():
    db = engine.database_settings({}, {}, base_dir=BASE)
    assert db["ENGINE"] == "django.db.backends.sqlite3"
    assert db["NAME"] == "/srv/board/oqron.sqlite3"
    assert db["OPTIONS"]["timeout"] == engine.SQLITE_TIMEOUT_S
    assert db["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in db["OPTIONS"]["init_command"]


def test_postgres_url_is_split_for_django():
    url = "postgresql://ops:p%40ss%3Aw@db.example:6543/oqron?options=-csearch_path%3Dboard&sslmode=require"
    db = engine.database_settings({"MODE": "postgres", "DATABASE_URL": url}, {}, base_dir=BASE)
    assert db == {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "oqron",
        "USER": "ops",
        "PASSWORD": "p@ss:w",
        "HOST": "db.example",
        "PORT": "6543",
        "OPTIONS": {"options": "-csearch_path=board", "sslmode": "require"},
    }


def test_postgres_url_without_credentials_or_host():
    db = engine.database_settings_for_url("postgresql:///oqron?host=/var/run/postgresql")
    assert (db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "oqron", "", "", "/var/run/postgresql", "")
    assert db["OPTIONS"] == {}


def test_redis_postgres_mode_uses_the_durable_postgres():
    db = engine.database_settings(
        {"MODE": "redis-postgres", "DATABASE_URL": "postgres://h/db", "REDIS_URL": "redis://h:6379/0"},
        {}, base_dir=BASE)
    assert db["ENGINE"] == "django.db.backends.postgresql" and db["NAME"] == "db"


@pytest.mark.parametrize("mode", ["memory", "redis"])
def test_non_sql_modes_keep_django_on_the_default_sqlite_file(mode):
    db = engine.database_settings({"MODE": mode, "REDIS_URL": "redis://h:6379/0"}, {}, base_dir=BASE)
    assert db["NAME"] == "/srv/board/oqron.sqlite3"


def test_a_bad_configuration_never_raises_in_settings():
    db = engine.database_settings({"MODE": "bogus"}, {}, base_dir=BASE)
    assert db == {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}
    assert engine.database_settings(["not", "a", "dict"], {}, base_dir=BASE)["NAME"] == ":memory:"


def test_an_unknown_url_scheme_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="expected sqlite:/// or postgresql://"):
        engine.database_settings_for_url("mysql://u:secret@h/db")


# -- the process-wide plane ----------------------------------------------------------


def test_get_config_follows_override_settings(settings):
    settings.OQRON = {"MODE": "memory", "PROJECT": "one"}
    assert engine.get_config().project == "one"
    settings.OQRON = {"MODE": "memory", "PROJECT": "two"}
    assert engine.get_config().project == "two"


def test_get_durable_starts_one_plane_across_threads(settings, monkeypatch):
    settings.OQRON = {"MODE": "memory", "PROJECT": "shop"}
    opened: list[object] = []
    real_configure = engine.oqronkit.configure

    def slow_configure(config: OqronConfig):
        time.sleep(0.05)  # widen the window in which a second thread could also configure one
        made = real_configure(config)
        opened.append(made)
        return made

    monkeypatch.setattr(engine.oqronkit, "configure", slow_configure)
    barrier = threading.Barrier(8)
    planes: list[DurablePlane] = []

    def worker() -> None:
        barrier.wait()
        planes.append(engine.get_durable())

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(opened) == 1
    assert len(planes) == 8 and all(p is opened[0].durable for p in planes)
    assert planes[0].scope.project == "shop"


def test_durable_for_shares_the_store_with_another_scope(settings):
    settings.OQRON = {"MODE": "memory"}
    shop = engine.durable_for("shop", "production")
    assert shop.store is engine.get_durable().store
    assert (shop.scope.project, shop.scope.environment) == ("shop", "production")
    shop.put("cron", "nightly", {"v": 1})
    assert engine.get_durable().get("cron", "nightly") is None
    assert engine.durable_for("shop", "production").get("cron", "nightly").value == {"v": 1}
    with pytest.raises(ConfigurationError):
        engine.durable_for("bad scope!", "production")


def test_reset_closes_the_plane(settings):
    settings.OQRON = {"MODE": "memory"}
    first = engine.get_durable()
    engine.reset()
    assert engine.get_durable() is not first


# -- the board's engine helpers (oqronkit.Engine.scoped / .controller) ----------------


def test_engine_for_acts_in_another_scope_without_a_handler(settings):
    settings.OQRON = {"MODE": "memory", "PROJECT": "home"}
    shop = engine.engine_for("shop", "production")
    assert (shop.config.project, shop.config.environment) == ("shop", "production")
    queue = shop.controller("emails")
    assert queue.fn is None and queue.engine is shop
    job = queue.add({"n": 1})
    assert shop.durable.get("queue_job:emails", job.id) is not None
    assert engine.get_durable().get("queue_job:emails", job.id) is None  # the configured scope is untouched
    assert shop.hot.depths("emails", 0).ready + shop.hot.depths("emails", 10**13).ready >= 1
    queue.pause()
    assert engine.durable_for("shop", "production").get("queue", "emails").value["paused"] is True
    # The scoped engine shares the planes: closing it closes nothing.
    shop.close()
    assert engine.get_durable().store is shop.parent.durable.store
    assert engine.get_engine().registry.queues.get("emails") is not queue  # its own registry


def test_controller_returns_the_declared_queue_when_there_is_one(settings):
    settings.OQRON = {"MODE": "memory"}
    from oqronkit import Engine, Registry

    local = Engine(engine.get_config(), registry=Registry())
    declared = local.queue("emails", handler=lambda ctx: None)
    assert local.controller("emails") is declared
    with pytest.raises(ConfigurationError):
        local.controller("bad:name")
    local.close()

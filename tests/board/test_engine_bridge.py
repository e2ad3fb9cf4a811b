"""oqronkit.contrib.django.engine: the only place Django settings become an OqronConfig."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import oqronkit
from oqronboard import standalone
from oqronkit import ConfigurationError, DurablePlane, OqronConfig
from oqronkit.contrib.django import databases, engine

BASE = Path("/srv/board")
URLS = {"default": "sqlite:////srv/board/oqron.sqlite3", "pg": "postgresql://h/db"}
VENDORS = {"default": "sqlite", "pg": "postgresql"}


def alias_url(alias: str, vendor: str) -> str:
    """A stand-in for DATABASES: two aliases, a SQLite and a PostgreSQL one."""
    if alias not in URLS:
        raise ConfigurationError(f"no alias {alias!r}")
    if VENDORS[alias] != vendor:
        raise ConfigurationError(f"DATABASES[{alias!r}] is {VENDORS[alias]}, not {vendor}")
    return URLS[alias]


def build(oqron: object = None, **environ: str) -> OqronConfig:
    return engine.build_config(oqron, environ, alias_url)


# -- build_config ----------------------------------------------------------------------


def test_defaults_put_the_engine_on_the_default_alias():
    config = build()
    assert config.mode == "sqlite"
    assert config.database_url == "sqlite:////srv/board/oqron.sqlite3"
    assert config.project == "default" and config.environment == "development"
    assert config.acknowledge_v1_layout is False


def test_setting_keys_in_any_case():
    config = build({"MODE": "postgres", "database_alias": "pg", "Project": "shop",
                    "ENVIRONMENT": "production", "MAX_RECORD_BYTES": 2048, "ACKNOWLEDGE_V1_LAYOUT": True})
    assert (config.mode, config.database_url, config.project) == ("postgres", "postgresql://h/db", "shop")
    assert config.environment == "production" and config.max_record_bytes == 2048
    assert config.acknowledge_v1_layout is True


def test_the_setting_comes_first_the_environment_fills_the_rest():
    config = build(
        {"MODE": "redis-postgres", "DATABASE_ALIAS": "pg", "PROJECT": "shop"},
        OQRON_MODE="sqlite", OQRON_REDIS_URL="redis://127.0.0.1:6379/2", OQRON_PROJECT="billing",
        OQRON_ENVIRONMENT="staging",
    )
    assert config.mode == "redis-postgres" and config.redis_url == "redis://127.0.0.1:6379/2"
    assert (config.project, config.environment) == ("shop", "staging")


def test_the_environment_never_names_the_database():
    # OQRON_DATABASE_URL belongs to the standalone project's settings (its DATABASES), not the engine.
    assert build(OQRON_DATABASE_URL="postgresql://elsewhere/db").database_url == URLS["default"]


def test_empty_environment_variables_are_ignored():
    assert build({"PROJECT": "shop"}, OQRON_PROJECT="").project == "shop"


def test_memory_and_redis_modes_need_no_database():
    assert build({"MODE": "memory", "DATABASE_ALIAS": "missing"}).database_url is None
    assert build(OQRON_MODE="redis", OQRON_REDIS_URL="redis://h:6379/0").mode == "redis"


@pytest.mark.parametrize(
    ("oqron", "environ", "message"),
    [
        ("sqlite", {}, "must be a dict"),
        ({"MODE": "bogus"}, {}, "OQRON mode 'bogus'"),
        ({"NOPE": 1}, {}, "Unknown OQRON setting 'NOPE'"),
        ({"DATABASE_URL": "postgresql://h/db"}, {}, r"OQRON\['DATABASE_URL'\] is not used in a Django project"),
        ({"DATABASE_ALIAS": 5}, {}, "must name an alias of DATABASES"),
        ({"MODE": "postgres", "DATABASE_ALIAS": "missing"}, {}, "no alias 'missing'"),
        ({"MODE": "postgres"}, {}, "DATABASES\\['default'\\] is sqlite, not postgresql"),
        ({"ACKNOWLEDGE_V1_LAYOUT": "false"}, {}, "acknowledge_v1_layout must be True or False"),
        ({"MAX_RECORD_BYTES": 0}, {}, "max_record_bytes must be a positive integer"),
        ({}, {"OQRON_PROJECT": "a b"}, "OQRON project 'a b'"),
        ({}, {"OQRON_MODE": "redis"}, "needs a Redis URL"),
    ],
)
def test_bad_values_raise_configuration_error(oqron, environ, message):
    with pytest.raises(ConfigurationError, match=message):
        build(oqron, **environ)


# -- an alias's database as the engine's URL, and back -----------------------------------


def test_a_sqlite_alias_is_an_absolute_file():
    assert databases.engine_url("default", {"NAME": "/srv/x.sqlite3"}, "sqlite") == "sqlite:////srv/x.sqlite3"
    relative = databases.engine_url("default", {"NAME": "x.sqlite3"}, "sqlite")
    assert relative == f"sqlite:///{Path('x.sqlite3').resolve()}"


@pytest.mark.parametrize("name", [":memory:", "file:memorydb_default?mode=memory&cache=shared", ""])
def test_an_in_memory_sqlite_alias_cannot_hold_the_engine(name):
    with pytest.raises(ConfigurationError, match="in-memory SQLite database"):
        databases.engine_url("default", {"NAME": name}, "sqlite")


def test_a_postgres_alias_becomes_a_url_with_its_libpq_options():
    url = databases.engine_url("default", {
        "NAME": "oq ron", "USER": "ops", "PASSWORD": "p@ss:w/", "HOST": "db.example", "PORT": 6543,
        "OPTIONS": {"sslmode": "require", "options": "-csearch_path=board", "connect_timeout": 5,
                    "isolation_level": 1, "server_side_binding": True, "pool": {"min_size": 2}},
    }, "postgresql")
    assert url == ("postgresql://ops:p%40ss%3Aw%2F@db.example:6543/oq%20ron"
                   "?sslmode=require&options=-csearch_path%3Dboard&connect_timeout=5")
    # The round trip gives Django the same database back.
    back = databases.django_database(url)
    assert (back["NAME"], back["USER"], back["PASSWORD"], back["HOST"], back["PORT"]) == (
        "oq ron", "ops", "p@ss:w/", "db.example", "6543")


def test_a_socket_directory_travels_as_the_host_parameter():
    url = databases.engine_url("default", {"NAME": "oqron", "HOST": "/var/run/postgresql"}, "postgresql")
    assert url == "postgresql:///oqron?host=%2Fvar%2Frun%2Fpostgresql"
    assert databases.django_database(url)["HOST"] == "/var/run/postgresql"


def test_an_option_the_engine_pool_cannot_pass_is_named():
    with pytest.raises(ConfigurationError, match=r"\['OPTIONS'\]\['cursor'\]"):
        databases.engine_url("db2", {"NAME": "x", "OPTIONS": {"cursor": object()}}, "postgresql")


def test_another_vendor_is_refused_by_name():
    with pytest.raises(ConfigurationError, match="DATABASES\\['legacy'\\] is a mysql database"):
        databases.engine_url("legacy", {"NAME": "x"}, "mysql")


def test_sqlite_url_becomes_the_engine_file_settings():
    db = databases.django_database("sqlite:////srv/board/oqron.sqlite3")
    assert db["ENGINE"] == "django.db.backends.sqlite3"
    assert db["NAME"] == "/srv/board/oqron.sqlite3"
    assert db["OPTIONS"]["timeout"] == databases.SQLITE_TIMEOUT_S
    assert db["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in db["OPTIONS"]["init_command"]


def test_postgres_url_is_split_for_django():
    url = "postgresql://ops:p%40ss%3Aw@db.example:6543/oqron?options=-csearch_path%3Dboard&sslmode=require"
    assert databases.django_database(url) == {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "oqron",
        "USER": "ops",
        "PASSWORD": "p@ss:w",
        "HOST": "db.example",
        "PORT": "6543",
        "OPTIONS": {"options": "-csearch_path=board", "sslmode": "require"},
    }


def test_an_unknown_url_scheme_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="expected sqlite:/// or postgresql://"):
        databases.django_database("mysql://u:secret@h/db")


# -- the standalone project's settings from its environment -----------------------------


def test_the_standalone_database_is_the_engine_file_beside_manage_py():
    problems: list[str] = []
    assert standalone.database({}, BASE, problems)["NAME"] == "/srv/board/oqron.sqlite3"
    db = standalone.database({"OQRON_DATABASE_URL": "sqlite:///data/x.sqlite3"}, BASE, problems)
    assert db["NAME"] == "/srv/board/data/x.sqlite3"
    pg = standalone.database({"OQRON_MODE": "redis-postgres", "OQRON_DATABASE_URL": "postgres://h/db"}, BASE, problems)
    assert pg["ENGINE"] == "django.db.backends.postgresql" and pg["NAME"] == "db"
    assert problems == []


@pytest.mark.parametrize("mode", ["memory", "redis"])
def test_non_sql_modes_keep_django_on_the_default_sqlite_file(mode):
    db = standalone.database({"OQRON_MODE": mode, "OQRON_DATABASE_URL": "postgres://h/db"}, BASE, [])
    assert db["NAME"] == "/srv/board/oqron.sqlite3"


def test_a_bad_url_never_raises_in_settings_and_is_reported():
    problems: list[str] = []
    db = standalone.database({"OQRON_DATABASE_URL": "mysql://u:secret@h/db"}, BASE, problems)
    assert db == {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}
    assert len(problems) == 1 and "expected sqlite:/// or postgresql://" in problems[0] and "secret" not in problems[0]


# -- the process-wide plane ----------------------------------------------------------


def test_get_config_follows_override_settings(settings):
    settings.OQRON = {"MODE": "memory", "PROJECT": "one"}
    assert engine.get_config().project == "one"
    settings.OQRON = {"MODE": "memory", "PROJECT": "two"}
    assert engine.get_config().project == "two"


def test_get_durable_starts_one_plane_across_threads(settings, monkeypatch):
    settings.OQRON = {"MODE": "memory", "PROJECT": "shop"}
    opened: list[object] = []
    real_engine = engine.oqronkit.Engine

    def slow_engine(config: OqronConfig):
        time.sleep(0.05)  # widen the window in which a second thread could also build one
        made = real_engine(config)
        opened.append(made)
        return made

    monkeypatch.setattr(engine.oqronkit, "Engine", slow_engine)
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


def test_the_default_engine_is_the_settings_one_before_any_board_code_runs(settings):
    # A producer (a view, a shell, a script under django.setup()) adds through oqronkit's
    # default engine: the integration's ready() made it this project's, never one from the environment.
    settings.OQRON = {"MODE": "memory", "PROJECT": "from-settings"}
    assert oqronkit.get_engine() is engine.get_engine()
    assert oqronkit.get_engine().config.project == "from-settings"
    job = oqronkit.queue("bridge-default-engine").add({"n": 1})
    assert engine.get_durable().get("queue_job:bridge-default-engine", job.id) is not None


def test_a_bad_setting_is_a_clear_error_for_a_producer_not_a_fallback(settings):
    settings.OQRON = {"MODE": "postgres", "DATABASE_ALIAS": "nowhere"}
    with pytest.raises(ConfigurationError, match="not an alias of DATABASES"):
        oqronkit.queue("bridge-bad-setting").add({"n": 1})


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

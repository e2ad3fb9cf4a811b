"""OqronConfig: defaults, validation of every field, environment overrides, redaction;
a worker's own variables (WorkerEnvironment); config.py alone reads the environment.

Pure: no Django, no environment read (the environment is passed in as a mapping).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from oqronkit import ConfigurationError, OqronConfig, config_from_env, config_from_mapping
from oqronkit.config import (
    DEFAULT_MAX_RECORD_BYTES,
    MODES,
    WorkerEnvironment,
    child_environment,
    redact_url,
    worker_environment,
)


def test_defaults():
    config = OqronConfig()
    assert config.mode == "sqlite"
    assert config.database_url == "sqlite:///oqron.sqlite3"
    assert config.redis_url is None
    assert (config.project, config.environment) == ("default", "development")
    assert config.max_record_bytes == DEFAULT_MAX_RECORD_BYTES == 1024 * 1024
    assert config.acknowledge_v1_layout is False
    assert config.run_log_limit == 200 and config.run_timeline_limit == 100


def test_frozen_and_keyword_only():
    with pytest.raises(dataclasses.FrozenInstanceError):
        OqronConfig().mode = "memory"  # type: ignore[misc]
    with pytest.raises(TypeError):
        OqronConfig("memory")  # type: ignore[misc]


def test_configuration_error_is_a_value_error():
    with pytest.raises(ValueError):
        OqronConfig(mode="bogus")  # type: ignore[arg-type]


# -- every field -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"mode": "memory", "database_url": None},
        {"mode": "sqlite", "database_url": "sqlite:////abs/path.sqlite3"},
        {"mode": "postgres", "database_url": "postgresql://u:p@h:5432/db"},
        {"mode": "postgres", "database_url": "postgres://h/db"},
        {"mode": "redis", "database_url": None, "redis_url": "redis://h:6379/0"},
        {"mode": "redis", "database_url": None, "redis_url": "rediss://h:6380/1"},
        {"mode": "redis", "database_url": None, "redis_url": "unix:///run/redis.sock"},
        {"mode": "redis-postgres", "database_url": "postgresql://h/db", "redis_url": "redis://h"},
        {"project": "a" * 100, "environment": "prod.eu-1_b"},
        {"project": "0day"},
        {"max_record_bytes": 1, "run_log_limit": 1, "run_timeline_limit": 1},
        {"acknowledge_v1_layout": True},
    ],
)
def test_valid_values(kwargs):
    config = OqronConfig(**kwargs)
    for name, value in kwargs.items():
        assert getattr(config, name) == value


def test_every_mode_is_listed():
    assert MODES == ("memory", "sqlite", "postgres", "redis", "redis-postgres")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "bogus"}, "OQRON mode 'bogus' is not one of memory, sqlite"),
        ({"mode": "SQLite"}, "OQRON mode 'SQLite'"),
        ({"mode": None}, "OQRON mode None"),
        ({"database_url": None}, "mode 'sqlite' needs a database URL"),
        ({"database_url": ""}, "mode 'sqlite' needs a database URL"),
        ({"database_url": "postgresql://h/db"}, "does not suit mode 'sqlite': expected a sqlite:// URL"),
        ({"mode": "postgres"}, "does not suit mode 'postgres': expected a postgresql:// URL"),
        ({"mode": "postgres", "database_url": None}, "mode 'postgres' needs a database URL"),
        ({"mode": "redis-postgres", "database_url": "sqlite:///x"}, "does not suit mode 'redis-postgres'"),
        ({"mode": "redis", "database_url": None}, "mode 'redis' needs a Redis URL"),
        ({"mode": "redis", "redis_url": "http://h"}, "mode 'redis' needs a Redis URL"),
        ({"mode": "redis-postgres", "database_url": "postgresql://h/db"}, "needs a Redis URL"),
        ({"project": ""}, "OQRON project ''"),
        ({"project": "a" * 101}, "OQRON project"),
        ({"project": "-lead"}, "OQRON project '-lead'"),
        ({"project": "a b"}, "OQRON project 'a b'"),
        ({"project": "a:b"}, "OQRON project 'a:b'"),  # ':' separates Redis key parts
        ({"project": 5}, "OQRON project 5"),
        ({"environment": "prod/eu"}, "OQRON environment 'prod/eu'"),
        ({"environment": None}, "OQRON environment None"),
        ({"max_record_bytes": 0}, "max_record_bytes must be a positive integer, got 0"),
        ({"max_record_bytes": True}, "max_record_bytes must be a positive integer, got True"),
        ({"max_record_bytes": 1.5}, "max_record_bytes must be a positive integer"),
        ({"max_record_bytes": "10"}, "max_record_bytes must be a positive integer"),
        ({"run_log_limit": 0}, "run_log_limit must be a positive integer"),
        ({"run_timeline_limit": -1}, "run_timeline_limit must be a positive integer"),
    ],
)
def test_invalid_values_name_the_setting(kwargs, message):
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(")):
        OqronConfig(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"database_url": 5}, "database_url"), ({"mode": "redis", "database_url": None, "redis_url": 5}, "redis_url")],
)
def test_url_of_the_wrong_type_is_a_configuration_error(kwargs, name):
    with pytest.raises(ConfigurationError, match=f"OQRON {name} must be a URL string or None, got int"):
        OqronConfig(**kwargs)


@pytest.mark.parametrize("value", ["false", "yes", 1, None])
def test_acknowledge_v1_layout_must_be_a_bool(value):
    # "false" is truthy: accepting strings would silently acknowledge the v1 table.
    with pytest.raises(ConfigurationError, match="acknowledge_v1_layout must be True or False"):
        OqronConfig(acknowledge_v1_layout=value)


def test_sqlite_url_without_a_path_is_rejected_up_front():
    with pytest.raises(ConfigurationError, match="names no file"):
        OqronConfig(database_url="sqlite:///")


def test_sqlite_path():
    assert OqronConfig(database_url="sqlite:///rel/x.db").sqlite_path == "rel/x.db"
    assert OqronConfig(database_url="sqlite:////abs/x.db").sqlite_path == "/abs/x.db"
    with pytest.raises(ConfigurationError, match="no SQLite database URL"):
        _ = OqronConfig(mode="memory", database_url=None).sqlite_path


def test_with_scope_copies_and_validates():
    config = OqronConfig(project="a")
    other = config.with_scope(project="b", environment="production")
    assert (other.project, other.environment, config.project) == ("b", "production", "a")
    with pytest.raises(ConfigurationError):
        config.with_scope(project="no spaces", environment="production")


# -- builders ------------------------------------------------------------------------------


def test_mapping_keys_in_any_case():
    config = config_from_mapping({"MODE": "memory", "Project": "shop", "max_record_bytes": 10})
    assert (config.mode, config.project, config.max_record_bytes) == ("memory", "shop", 10)
    assert config.database_url is None  # memory mode needs none, so the default is dropped


def test_mapping_over_a_base_keeps_the_rest():
    base = OqronConfig(project="shop", environment="production")
    config = config_from_mapping({"MAX_RECORD_BYTES": 99}, base=base)
    assert (config.project, config.environment, config.max_record_bytes) == ("shop", "production", 99)


def test_unknown_keys_are_an_error_listing_the_known_ones():
    with pytest.raises(ConfigurationError, match="Unknown OQRON setting 'DATABASE'; known settings: "
                                                 "acknowledge_v1_layout, allow_redis_eviction, backend_wait, "
                                                 "database_url"):
        config_from_mapping({"DATABASE": "sqlite:///x"})


def test_env_overrides():
    environ = {
        "OQRON_MODE": "redis-postgres",
        "OQRON_DATABASE_URL": "postgresql://h/db",
        "OQRON_REDIS_URL": "redis://h:6379/3",
        "OQRON_PROJECT": "shop",
        "OQRON_ENVIRONMENT": "staging",
    }
    config = config_from_env(environ, base=OqronConfig(project="ignored", max_record_bytes=7))
    assert config.mode == "redis-postgres"
    assert (config.database_url, config.redis_url) == ("postgresql://h/db", "redis://h:6379/3")
    assert (config.project, config.environment, config.max_record_bytes) == ("shop", "staging", 7)


def test_env_ignores_unset_empty_and_foreign_variables():
    config = config_from_env({"OQRON_PROJECT": "", "OQRON_MAX_RECORD_BYTES": "5", "PATH": "/bin"})
    assert config == OqronConfig()


def test_env_mode_alone_drops_the_default_database_for_memory():
    assert config_from_env({"OQRON_MODE": "memory"}).database_url is None


def test_env_values_are_validated():
    with pytest.raises(ConfigurationError, match="does not suit mode 'postgres'"):
        config_from_env({"OQRON_MODE": "postgres", "OQRON_DATABASE_URL": "sqlite:///x"})
    with pytest.raises(ConfigurationError, match="OQRON project"):
        config_from_env({"OQRON_PROJECT": "bad name"})


def test_config_from_env_without_a_mapping_reads_the_process_environment(monkeypatch):
    monkeypatch.setenv("OQRON_MODE", "memory")
    monkeypatch.setenv("OQRON_PROJECT", "from-env")
    config = config_from_env()
    assert (config.mode, config.project, config.database_url) == ("memory", "from-env", None)


# -- a worker's own variables ------------------------------------------------------------------


def test_worker_environment_defaults():
    assert worker_environment({}) == WorkerEnvironment()
    assert WorkerEnvironment() == WorkerEnvironment(cpu_affinity="auto", cpu_lock_dir=None, worker_slot=0, imports=())


def test_worker_environment_reads_its_variables():
    env = worker_environment({
        "OQRON_CPU_AFFINITY": " Off ",
        "OQRON_CPU_LOCK_DIR": "/run/oqron",
        "OQRON_WORKER_SLOT": "3",
        "OQRON_IMPORTS": "shop.jobs,,mail.jobs",
        "OQRON_MODE": "memory",
    })
    assert env == WorkerEnvironment(cpu_affinity="off", cpu_lock_dir="/run/oqron", worker_slot=3,
                                    imports=("shop.jobs", "mail.jobs"))


def test_worker_environment_treats_empty_variables_as_unset():
    blank = {"OQRON_CPU_AFFINITY": "", "OQRON_CPU_LOCK_DIR": "", "OQRON_WORKER_SLOT": "", "OQRON_IMPORTS": ""}
    assert worker_environment(blank) == WorkerEnvironment()


def test_the_command_line_affinity_wins_over_the_variable():
    assert worker_environment({"OQRON_CPU_AFFINITY": "off"}, cpu_affinity="auto").cpu_affinity == "auto"
    assert worker_environment({"OQRON_CPU_AFFINITY": "fast"}, cpu_affinity="off").cpu_affinity == "off"


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"OQRON_CPU_AFFINITY": "fast"}, "OQRON_CPU_AFFINITY must be one of auto, off, got 'fast'."),
        ({"OQRON_WORKER_SLOT": "two"}, "OQRON_WORKER_SLOT must be a non-negative integer, got 'two'."),
        ({"OQRON_WORKER_SLOT": "-1"}, "OQRON_WORKER_SLOT must be a non-negative integer, got -1."),
    ],
)
def test_worker_environment_values_are_validated(environ, message):
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        worker_environment(environ)


def test_worker_environment_is_frozen_and_checked_when_built_directly():
    with pytest.raises(dataclasses.FrozenInstanceError):
        WorkerEnvironment().worker_slot = 1  # type: ignore[misc]
    with pytest.raises(ConfigurationError, match="OQRON_CPU_AFFINITY"):
        WorkerEnvironment(cpu_affinity="OFF")


def test_a_child_worker_gets_this_environment_and_its_slot(monkeypatch):
    monkeypatch.setenv("OQRON_MODE", "memory")
    env = child_environment(4)
    assert env["OQRON_MODE"] == "memory" and env["OQRON_WORKER_SLOT"] == "4"
    assert worker_environment(env).worker_slot == 4


def test_only_config_py_reads_the_environment():
    """Issue 19: environment variables are read in one place, so each is documented,
    validated and testable there; other modules take values from the config objects.
    The Django integration has its one place too (settings first, the environment second)."""
    package = Path(__file__).resolve().parents[2] / "oqronkit"
    readers = re.compile(r"os\.environ|getenv|from os import")
    allowed = {package / "config.py", package / "contrib" / "django" / "conf.py"}
    found = [
        f"{path.relative_to(package.parent)}:{number}: {line.strip()}"
        for path in sorted(package.rglob("*.py")) if path not in allowed
        for number, line in enumerate(path.read_text().splitlines(), 1) if readers.search(line)
    ]
    assert found == []


# -- redaction -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("postgresql://ops:s3cret@db:5432/oqron", "postgresql://ops:***@db:5432/oqron"),
        ("postgresql://ops:p%40ss@db/oqron", "postgresql://ops:***@db/oqron"),
        ("redis://user:pw@h:6379/0", "redis://user:***@h:6379/0"),
        ("postgresql://ops@db/oqron", "postgresql://ops@db/oqron"),
        ("postgresql://db/oqron", "postgresql://db/oqron"),
        ("sqlite:////abs/path.sqlite3", "sqlite:////abs/path.sqlite3"),
    ],
)
def test_redact_url(url, redacted):
    assert redact_url(url) == redacted


def test_redact_url_without_a_user_name():
    assert redact_url("redis://:secret@h:6379/0") == "redis://:***@h:6379/0"


def test_error_messages_never_show_a_password():
    with pytest.raises(ConfigurationError) as raised:
        OqronConfig(mode="postgres", database_url="mysql://ops:hunter2@db/oqron")
    assert "hunter2" not in str(raised.value) and "ops:***@db" in str(raised.value)
    with pytest.raises(ConfigurationError) as raised:
        OqronConfig(mode="sqlite", database_url="postgresql://ops:hunter2@db/oqron")
    assert "hunter2" not in str(raised.value)

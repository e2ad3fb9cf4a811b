"""Each board and integration setting: the project's setting first, the environment
variable of the same name second, a default third, in a host project as in the
standalone one; a variable that cannot be read is a clear error naming it."""

from __future__ import annotations

import pytest
from django.test import override_settings

from oqronboard.base import conf
from oqronkit import ConfigurationError
from oqronkit.contrib.django import conf as integration


def unset(settings, *names: str) -> None:
    for name in names:
        if hasattr(settings, name):
            delattr(settings, name)


def test_the_environment_fills_what_the_settings_leave_out(settings, monkeypatch):
    unset(settings, "OQRON_API_TOKENS", "OQRON_METRICS_TOKEN", "OQRON_INTERNAL_QUEUES", "OQRON_IMPORTS",
          "OQRON_BOARD_CACHE_SECONDS")
    monkeypatch.setenv("OQRON_API_TOKENS", "t" * 24 + "=alice, " + "u" * 24 + "=bob")
    monkeypatch.setenv("OQRON_METRICS_TOKEN", "m" * 24)
    monkeypatch.setenv("OQRON_INTERNAL_QUEUES", "ticker, housekeeping")
    monkeypatch.setenv("OQRON_IMPORTS", "shop.jobs,billing.jobs")
    monkeypatch.setenv("OQRON_BOARD_CACHE_SECONDS", "7.5")
    assert conf.api_tokens() == {"t" * 24: "alice", "u" * 24: "bob"}
    assert conf.metrics_token() == "m" * 24
    assert conf.internal_queues() == {"ticker", "housekeeping"}
    assert integration.imports() == ["shop.jobs", "billing.jobs"]
    assert conf.cache_seconds() == 7.5


def test_the_setting_wins_over_the_environment(settings, monkeypatch):
    monkeypatch.setenv("OQRON_INTERNAL_QUEUES", "from-env")
    monkeypatch.setenv("OQRON_API_TOKENS", "t" * 24 + "=alice")
    with override_settings(OQRON_INTERNAL_QUEUES=["from-settings"], OQRON_API_TOKENS={}):
        assert conf.internal_queues() == {"from-settings"}
        assert conf.api_tokens() == {}


def test_a_host_that_sets_nothing_gets_the_defaults(settings, monkeypatch):
    unset(settings, "OQRON_API_TOKENS", "OQRON_METRICS_TOKEN", "OQRON_INTERNAL_QUEUES", "OQRON_IMPORTS",
          "OQRON_BOARD_CACHE_SECONDS", "OQRON_READ_DATABASE_ALIAS")
    for name in ("OQRON_API_TOKENS", "OQRON_METRICS_TOKEN", "OQRON_INTERNAL_QUEUES", "OQRON_IMPORTS",
                 "OQRON_BOARD_CACHE_SECONDS", "OQRON_READ_DATABASE_ALIAS"):
        monkeypatch.delenv(name, raising=False)
    assert (conf.api_tokens(), conf.metrics_token()) == ({}, "")
    assert (conf.internal_queues(), integration.imports()) == (set(), [])
    assert conf.cache_seconds() == 2.0 and conf.read_database_alias() is None


def test_an_unreadable_variable_is_named(settings, monkeypatch):
    unset(settings, "OQRON_BOARD_CACHE_SECONDS")
    monkeypatch.setenv("OQRON_BOARD_CACHE_SECONDS", "soon")
    with pytest.raises(ConfigurationError, match="OQRON_BOARD_CACHE_SECONDS"):
        conf.cache_seconds()

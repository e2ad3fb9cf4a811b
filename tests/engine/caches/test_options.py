"""A cache's options are checked when it is declared, with errors naming the option."""

from __future__ import annotations

import pytest

import oqronkit
from oqronkit import Engine
from oqronkit.config import OqronConfig
from oqronkit.errors import ConfigurationError
from oqronkit.queues.queue import Registry


@pytest.fixture
def memory_engine():
    engine = Engine(OqronConfig(mode="memory", database_url=None, project="p"), registry=Registry())
    yield engine
    engine.close()


@pytest.mark.parametrize(("options", "message"), [
    ({"ttl": 0}, "ttl must be a positive"),
    ({"ttl": -1}, "ttl"),
    ({"ttl": "soon"}, "ttl"),
    ({"ttl": 1, "ttl_jitter": 1.0}, "ttl_jitter"),
    ({"ttl": 1, "stale_while_revalidate": -5}, "stale_while_revalidate"),
    ({"ttl": 1, "negative_ttl": 0}, "negative_ttl"),
    ({"ttl": 1, "local": 0}, "local"),
    ({"ttl": 1, "local": True}, "local"),
    ({"ttl": 1, "max_value_bytes": 0}, "max_value_bytes"),
    ({"ttl": 1, "tags": "users"}, "tags"),
    ({"ttl": 1, "fetcher": 3}, "fetcher"),
])
def test_bad_options_are_configuration_errors(memory_engine, options, message):
    with pytest.raises(ConfigurationError, match=message):
        memory_engine.cache("c", **options)


@pytest.mark.parametrize("name", ["", "a:b", "a{b}", "x" * 201, 5])
def test_bad_names_are_refused(memory_engine, name):
    with pytest.raises(ConfigurationError, match="Cache name"):
        memory_engine.cache(name, ttl=1)


def test_get_or_fetch_needs_a_fetcher(memory_engine):
    with pytest.raises(ConfigurationError, match="needs a fetcher"):
        memory_engine.cache("c", ttl=1).get_or_fetch("k")


def test_the_module_level_declaration_uses_the_default_engine():
    engine = oqronkit.configure(OqronConfig(mode="memory", database_url=None, project="p"))
    try:
        c = oqronkit.cache("module-level", ttl=5)
        assert oqronkit.cache("module-level") is c  # looked up, not redeclared
        c.set("k", "v")
        assert c.get("k") == "v" and engine.durable.get("cache", "module-level") is not None
    finally:
        engine.close()

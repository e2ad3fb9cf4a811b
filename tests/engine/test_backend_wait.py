"""The backend_wait setting: validated, read from OQRON_BACKEND_WAIT, and bounding how
long a call waits for an unreachable Postgres or Redis before BackendUnavailable."""

from __future__ import annotations

import math
import time

import pytest

from oqronkit import ConfigurationError, OqronConfig, config_from_env, config_from_mapping
from oqronkit.backends.postgres import PostgresDurableStore
from oqronkit.backends.redis import RedisHotPlane
from oqronkit.config import DEFAULT_BACKEND_WAIT_S
from oqronkit.errors import BackendUnavailable
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

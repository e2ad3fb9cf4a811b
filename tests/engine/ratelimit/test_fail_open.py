"""With the hot plane down, a ``fail_open`` limiter lets requests through (and says so);
any other limiter raises BackendUnavailable."""

from __future__ import annotations

import pytest

from oqronkit import Engine, OqronConfig, Registry
from oqronkit.errors import BackendUnavailable
from tests.dedicated import dedicated_postgres, dedicated_redis


@pytest.mark.parametrize("declared_first", [True, False])
def test_fail_open_lets_requests_through_while_the_hot_plane_is_down(declared_first):
    with dedicated_redis() as server:
        engine = Engine(OqronConfig(mode="redis", database_url=None, redis_url=server.url, project="p"),
                        registry=Registry())
        try:
            open_ = engine.rate_limit("open", limit=1, period=60, fail_open=True)
            closed = engine.rate_limit("closed", limit=1, period=60)
            if declared_first:
                assert open_.check("k").allowed and closed.check("k").allowed
            server.stop()
            for _ in range(3):  # even past the limit: nothing can count it
                decision = open_.check("k")
                assert decision.allowed and decision.failed_open and not decision.limited
            with pytest.raises(BackendUnavailable):
                closed.check("k")
            server.start()
            assert not open_.check("k").failed_open
        finally:
            engine.close()


def test_fail_open_on_a_postgres_hot_plane_that_went_down():
    with dedicated_postgres() as server:
        engine = Engine(OqronConfig(mode="postgres", database_url=server.url, project="p"), registry=Registry())
        try:
            open_ = engine.rate_limit("open", limit=1, period=60, fail_open=True)
            closed = engine.rate_limit("closed", limit=1, period=60)
            assert open_.check("k").allowed and closed.check("k").allowed
            server.stop()
            assert all(open_.check("k").failed_open for _ in range(3))
            with pytest.raises(BackendUnavailable):
                closed.check("k")
        finally:
            engine.close()

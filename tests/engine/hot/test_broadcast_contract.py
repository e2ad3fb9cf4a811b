"""``broadcast``/``listen`` on every hot plane that declares ``supports_broadcast``
(memory, Postgres, Redis); SQLite declares it False and the facade makes both calls no-ops."""

from __future__ import annotations

import threading

import pytest

from oqronkit.backends.types import Scope
from oqronkit.hot import HotPlaneFacade


def collect(hot, scope, channel):
    got: list[str | None] = []
    arrived = threading.Condition()

    def handler(message):
        with arrived:
            got.append(message)
            arrived.notify_all()

    sub = hot.listen(scope, channel, handler)
    assert sub.ready.wait(5)
    return sub, got, arrived


def wait_for(arrived, predicate):
    with arrived:
        assert arrived.wait_for(predicate, 5)


def test_every_listener_of_a_channel_gets_each_message(hot, scope):
    if not hot.supports_broadcast:
        pytest.skip(f"{hot.name} declares no broadcast")
    one, got_one, arrived_one = collect(hot, scope, "c")
    _two, got_two, arrived_two = collect(hot, scope, "c")
    _other, got_other, _ = collect(hot, scope, "other")
    _scoped, got_scoped, _ = collect(hot, Scope(scope.project, "elsewhere"), "c")
    hot.broadcast(scope, "c", "first")
    hot.broadcast(scope, "c", '{"keys":["é"]}')
    wait_for(arrived_one, lambda: got_one == ["first", '{"keys":["é"]}'])
    wait_for(arrived_two, lambda: len(got_two) == 2)
    one.close()
    hot.broadcast(scope, "c", "third")
    wait_for(arrived_two, lambda: len(got_two) == 3)
    assert got_one == ["first", '{"keys":["é"]}'] and got_other == [] and got_scoped == []


def test_the_facade_says_what_the_plane_can_do(hot, scope):
    facade = HotPlaneFacade(hot, project=scope.project, environment=scope.environment)
    assert facade.supports_broadcast is hot.supports_broadcast
    if not hot.supports_broadcast:
        assert facade.listen("c", lambda message: None) is None
        facade.broadcast("c", "nobody hears this")  # a no-op, not an error

"""A controllable clock, engines over every mode, and a scheduler that leads at once.

Scheduler tests never sleep for slots: they move the clock and call ``tick()``;
handlers still run on the scheduler's real thread pool, so tests wait for it with
``executor.wait_idle()`` (the :func:`step` helper does both).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from oqronkit import Engine, OqronConfig, Registry
from oqronkit.scheduler import Scheduler
from tests.engine.queue.conftest import MODES, make_config

START = datetime(2026, 1, 1, tzinfo=UTC)


def ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


class FakeClock:
    """Epoch milliseconds that only move when a test says so."""

    def __init__(self, start: datetime = START) -> None:
        self.now = ms(start)

    def __call__(self) -> int:
        return self.now

    def set(self, when: datetime | int) -> None:
        self.now = when if isinstance(when, int) else ms(when)

    def advance(self, seconds: float) -> None:
        self.now += round(seconds * 1000)


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    """The scheduler's clock and the operator API's (pause, run-now, trigger) at once."""
    fake = FakeClock()
    monkeypatch.setattr("oqronkit.scheduler.control.clock", fake)
    return fake


@pytest.fixture
def mem_engine(scope_names) -> Iterator[Engine]:
    eng = Engine(OqronConfig(mode="memory", database_url=None, project=scope_names[0]), registry=Registry())
    yield eng
    eng.close()


@pytest.fixture(params=MODES)
def any_engine(request, tmp_path, scope_names) -> Iterator[Engine]:
    """An engine on every mode (memory, SQLite, Postgres, Redis, Redis + Postgres)."""
    eng = Engine(make_config(request.param, request, tmp_path, scope_names[0]), registry=Registry())
    try:
        yield eng
    finally:
        eng.close()
        if request.param.startswith("redis"):
            from tests.services import drop_redis_project

            drop_redis_project(eng.config.redis_url or "", scope_names[0])


def leader(engine: Engine, clock: FakeClock, *, worker_id: str = "leader-1", **options) -> Scheduler:
    options.setdefault("background", False)
    scheduler = Scheduler(engine, worker_id=worker_id, clock=clock, **options)
    scheduler.set_leader(True)
    return scheduler


@pytest.fixture
def sched(mem_engine, clock) -> Iterator[Scheduler]:
    scheduler = leader(mem_engine, clock)
    yield scheduler
    scheduler.shutdown(wait=2)


def step(scheduler: Scheduler, clock: FakeClock | None = None, seconds: float = 0.0) -> int:
    """Advance the clock (optionally), tick (and the recovery pass the leader's services
    run beside it), and wait for the handlers it started."""
    if clock is not None and seconds:
        clock.advance(seconds)
    started = scheduler.tick()
    scheduler.recover()
    assert scheduler.executor.wait_idle(10), "handlers did not finish"
    return started


def runs_of(engine: Engine, name: str, module: str = "cron") -> list[dict]:
    records = engine.durable.list("runs", name=name, module=module, order="started", limit=1000).records
    return sorted((r.value for r in records), key=lambda r: (r.get("slotAt") or 0, r["id"]))

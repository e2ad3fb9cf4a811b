"""The last minutes by outcome from the rollup's minute buckets (history/recent.py): what
they serve plus a count of the runs after them equals a count of every run, through runs
still open when their minute was rolled (finished since, or deleted), a minute with too
many open runs to list, and demo buckets."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from oqronkit import Engine, OqronConfig, RecordWrite, Registry
from oqronkit.clock import now_ms
from oqronkit.history import writes
from oqronkit.history.buckets import MINUTE_MS, Bucket, floor_to, keys_of_run
from oqronkit.history.recent import recent_outcomes
from oqronkit.history.rollup import rollup
from oqronkit.history.writes import DEFAULT_RETENTION, write_buckets
from oqronkit.namespaces import RUNS
from oqronkit.queues.runs import finish_run, new_run

NOW = floor_to(now_ms(), "minute") + 30_000
SINCE = NOW - 30 * MINUTE_MS - 30_000  # a minute start, 30 minutes back


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def engine(request, tmp_path):
    url = {"sqlite": f"sqlite:///{tmp_path / 'oqron.sqlite3'}", "memory": None}.get(request.param)
    if request.param == "postgres":
        url = request.getfixturevalue("pg_schema_url")
    engine = Engine(OqronConfig(mode=request.param, database_url=url, project=f"p{id(request)}"),
                    registry=Registry())
    yield engine
    engine.close()


def run(engine: Engine, name: str, started: int, status: str, *, module: str = "queue", job: bool = True) -> dict:
    value = new_run(name=name, module=module, trigger=module, input=None, attempts=1, app="a", environment="e",
                    worker_id="w", job_id=f"j-{started}-{name}" if job else None, started_at=started)
    if status != "running":
        finish_run(value, status, at=started + 5)
    engine.durable.put_many([RecordWrite(RUNS, value["id"], value)])
    return value


def seed(engine: Engine) -> list[dict]:
    runs = []
    for i in range(40):  # 40 minutes of runs: emails and reports, a cron, some failing, one still running
        started = SINCE - 10 * MINUTE_MS + i * MINUTE_MS + 1_000
        runs.append(run(engine, "emails", started, "failed" if i % 4 == 0 else "completed"))
        runs.append(run(engine, "reports", started + 2_000, "completed", module="worker"))
        runs.append(run(engine, "nightly", started + 3_000, "completed", module="cron", job=False))
        if i % 5 == 0:
            runs.append(run(engine, "emails", started + 4_000, "running"))
    return runs


def every_run(engine: Engine, since: int, until: int | None = None) -> Counter:
    """The count the buckets must equal: every stored run, by (scope, key, minute, status)."""
    found: Counter = Counter()
    for record in engine.durable.list(RUNS, limit=1000).records:
        value = record.value
        started = int(value["startedAt"])
        if started < since or (until is not None and started >= until):
            continue
        for scope, key in keys_of_run(value):
            if scope in ("all", "queue"):
                found[(scope, key, floor_to(started, "minute"), value["status"])] += 1
    return found


def served(engine: Engine, **kwargs: Any) -> tuple[Counter, int]:
    recent = recent_outcomes(engine.durable, SINCE, NOW, **kwargs)
    found: Counter = Counter()
    for (scope, key), minutes in recent.counts.items():
        for minute, outcomes in minutes.items():
            for status, count in outcomes.items():
                found[(scope, key, minute, status)] += count
    return found, recent.until


def test_buckets_plus_the_runs_after_them_equal_a_count_of_every_run(engine):
    runs = seed(engine)
    assert served(engine)[1] == SINCE  # nothing rolled yet: every run is the caller's to count
    rollup(engine.durable, now=NOW - 5 * MINUTE_MS)
    found, until = served(engine)
    assert SINCE < until < NOW and found
    assert found + every_run(engine, until) == every_run(engine, SINCE)
    # Runs open when their minute was rolled finish, or are deleted: counted as they are now.
    open_runs = [r for r in runs if r["status"] == "running" and SINCE <= r["startedAt"] < until]
    assert len(open_runs) >= 3
    finish_run(open_runs[0], "completed", at=NOW)
    finish_run(open_runs[1], "failed", at=NOW)
    engine.durable.put_many([RecordWrite(RUNS, r["id"], r) for r in open_runs[:2]])
    found, until = served(engine)
    assert found + every_run(engine, until) == every_run(engine, SINCE)
    assert found[("queue", "emails", floor_to(open_runs[0]["startedAt"], "minute"), "running")] == 0
    engine.durable.delete(RUNS, open_runs[2]["id"])
    found, cut = served(engine)
    assert cut == floor_to(open_runs[2]["startedAt"], "minute")  # served up to the gone run's minute
    assert found + every_run(engine, cut) == every_run(engine, SINCE)


def test_a_caller_settles_the_open_runs_from_a_read_of_its_own(engine):
    seed(engine)
    rollup(engine.durable, now=NOW - 5 * MINUTE_MS)
    recent = recent_outcomes(engine.durable, SINCE, NOW, read_open=False)
    assert recent.open and all(status == "running" for _, status in recent.open.values())
    first = sorted(recent.open)[0]
    facts = {id: {"name": "emails", "module": "queue", "status": "running", "jobId": "j", "queue": None}
             for id in recent.open}
    facts[first] = {**facts[first], "status": "completed"}  # the few fields the board reads (open_run_facts)
    minute = recent.open[first][0]
    before = recent.counts[("all", "*")][minute].copy()
    recent.settle(facts)
    after = recent.counts[("all", "*")][minute]
    assert after.get("running", 0) == before["running"] - 1 and after["completed"] == before["completed"] + 1
    assert recent.open == {}


def test_a_minute_with_too_many_open_runs_ends_what_is_served(engine, monkeypatch):
    runs = seed(engine)
    monkeypatch.setattr(writes, "OPEN_LISTED", 0)  # no minute lists its open runs
    rollup(engine.durable, now=NOW - 5 * MINUTE_MS)
    first_open = min(floor_to(r["startedAt"], "minute") for r in runs if r["status"] == "running"
                     and r["startedAt"] >= SINCE)
    found, until = served(engine)
    assert until == first_open
    assert found + every_run(engine, until) == every_run(engine, SINCE)


def test_demo_buckets_and_other_scopes_are_not_served(engine):
    seed(engine)
    rollup(engine.durable, now=NOW - 5 * MINUTE_MS)
    minute = SINCE + MINUTE_MS
    demo = Bucket("queue", "demo-queue", minute, outcomes={"completed": 7})
    write_buckets(engine.durable, "minute", minute, [demo], DEFAULT_RETENTION, synthetic=True, open_runs=[])
    found, _ = served(engine)
    assert not any(key == "demo-queue" for _, key, _, _ in found)
    assert all(scope in ("all", "queue") for scope, _, _, _ in found)
    assert served(engine, scopes=("handler",))[0] == Counter()


def test_a_read_whose_rollup_state_has_not_changed_reuses_the_buckets(engine, monkeypatch):
    seed(engine)
    rollup(engine.durable, now=NOW - 5 * MINUTE_MS)
    store, reads = engine.durable.store, []
    real_get_many = store.get_many

    def counted(scope, table, namespace, ids):
        reads.append(namespace)
        return real_get_many(scope, table, namespace, ids)

    monkeypatch.setattr(store, "get_many", counted)
    first, until = served(engine)
    assert "metrics_minute" in reads
    reads.clear()
    assert served(engine) == (first, until)
    assert "metrics_minute" not in reads  # the state and the open runs only
    # A pass rolls more minutes: the state changed, the buckets are read again.
    rollup(engine.durable, now=NOW)
    reads.clear()
    found, later = served(engine)
    assert "metrics_minute" in reads and later > until
    assert found + every_run(engine, later) == every_run(engine, SINCE)

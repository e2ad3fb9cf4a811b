"""The leader runs the rollup on its own thread each interval; a follower never does, and
a new leader picks up where the last one's watermark stands."""

from __future__ import annotations

from oqronkit import Engine, OqronConfig, RecordWrite, Registry
from oqronkit.clock import now_ms
from oqronkit.history.buckets import bucket_id, floor_to
from oqronkit.history.rollup import read_state
from oqronkit.namespaces import METRICS_MINUTE, METRICS_STATE, RUNS
from oqronkit.queues.runs import finish_run, new_run
from oqronkit.services.leader import Services


def test_the_leader_rolls_up_and_a_follower_does_not():
    engine = Engine(OqronConfig(mode="memory"), registry=Registry())
    try:
        started = now_ms() - 5 * 60_000
        run = new_run(name="emails", module="queue", trigger="queue", input=None, attempts=1, app="a",
                      environment="e", worker_id="w", job_id="j1", started_at=started)
        finish_run(run, "completed", at=started + 10)
        engine.durable.put_many([RecordWrite(RUNS, run["id"], run)])
        engine.durable.put(METRICS_STATE, "rollup", {"next": floor_to(started, "minute")})
        leader, follower = Services(engine, worker_id="w1"), Services(engine, worker_id="w2")
        leader.tick()
        follower.tick()
        assert leader.is_leader and not follower.is_leader and follower._rollup is None
        assert leader._rollup is not None
        leader._rollup.join(10)
        minute = floor_to(started, "minute")
        found = engine.durable.get(METRICS_MINUTE, bucket_id(minute, "handler", "emails"))
        assert found is not None and found.value["outcomes"] == {"completed": 1}
        assert read_state(engine.durable)["next"] > minute
        leader.resign()
    finally:
        engine.close()


def test_workers_record_a_deploy_marker_only_when_their_version_changes(tmp_path):
    from oqronkit.history.deploys import deploy_markers
    from oqronkit.worker import WorkerProcess

    def deploy(version: str, starts: int) -> Engine:
        engine = Engine(OqronConfig(mode="sqlite", database_url=f"sqlite:///{tmp_path / 'oqron.sqlite3'}",
                                    version=version), registry=Registry())
        engine.queue("emails", handler=lambda ctx: None)
        for _ in range(starts):
            WorkerProcess(engine, burst=True).run()
        return engine

    first = deploy("v7", 2)  # two worker starts of one version: one marker
    second = deploy("v8", 1)
    try:
        assert [(m.version, m.previous) for m in deploy_markers(second.durable, since=0)] == \
            [("v7", None), ("v8", "v7")]
    finally:
        first.close()
        second.close()


def test_a_resigning_leader_waits_for_its_rollup_thread(monkeypatch):
    # The engine closes its stores right after the worker resigns: a rollup still inside a
    # SQLite call then met a closed connection (a segfault in the suite), so resign waits.
    import threading

    import oqronkit.services.leader as leader_module

    entered, release = threading.Event(), threading.Event()

    def slow_rollup(durable, *, retention):
        entered.set()
        release.wait(2)

    monkeypatch.setattr(leader_module, "rollup", slow_rollup)
    engine = Engine(OqronConfig(mode="memory"), registry=Registry())
    try:
        services = Services(engine, worker_id="w1")
        services.tick()
        assert entered.wait(5) and services._rollup is not None and services._rollup.is_alive()
        threading.Timer(0.3, release.set).start()
        services.resign()
        assert not services._rollup.is_alive()
    finally:
        release.set()
        engine.close()

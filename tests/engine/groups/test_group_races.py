"""Two processes settling the same group's members at once: one decides, one callback."""

from __future__ import annotations

import multiprocessing
import threading
import time

from oqronkit import Engine, OqronConfig, Registry, get_group, group_results
from oqronkit.groups.ledger import member_settled, members_completed
from oqronkit.queues.jobs import Job
from tests.engine.queue.conftest import running, wait_until

MEMBERS = 60


def settle_all(config: OqronConfig | None, engine: Engine | None, gid: str, start: float, reverse: bool) -> None:
    """Settle every member of ``gid`` as completed from ``start`` on (a shared instant, so
    both sides overlap): in the finisher's batches, or (``reverse``) one by one from the
    last member; a process of its own when ``config``."""
    own = Engine(config, registry=Registry()) if config is not None else None
    eng = own or engine
    assert eng is not None
    try:
        members = group_results(gid, engine=eng)
        time.sleep(max(0.0, start - time.time()))
        jobs = [(Job(id=m.job_id, queue=m.queue, data=None, group=gid), {"i": m.index}) for m in members]
        if reverse:  # one by one, as a death (or a dependency hook) settles a member
            for job, output in reversed(jobs):
                member_settled(eng.durable, eng.hot, job, "completed", output=output)
        else:  # in batches, as the finisher settles completions
            for start in range(0, len(jobs), 7):
                members_completed(eng.durable, eng.hot, jobs[start:start + 7])
    finally:
        if own is not None:
            own.close()


def test_concurrent_completions_from_two_processes_fire_the_callback_once(engine: Engine, mode):
    calls: list = []
    engine.queue("work")
    engine.queue("done", handler=lambda ctx: calls.append(ctx.group_id))
    gid = engine.group([("work", i) for i in range(MEMBERS)], on_complete=("done", None))
    for m in group_results(gid, engine=engine):  # completed: gone from the queue
        engine.durable.delete("queue_job:work", m.job_id)
    start = time.time() + 1.0
    if mode == "memory":  # one process holds the only memory plane: two threads race instead
        sides = [threading.Thread(target=settle_all, args=(None, engine, gid, start, r)) for r in (False, True)]
    else:
        spawn = multiprocessing.get_context("spawn")
        sides = [spawn.Process(target=settle_all, args=(engine.config, None, gid, start, r)) for r in (False, True)]
    for side in sides:
        side.start()
    for side in sides:
        side.join(60)
    if mode != "memory":
        assert [s.exitcode for s in sides] == [0, 0]  # type: ignore[union-attr]
    assert get_group(gid, engine=engine).status == "completed"
    assert [m.output for m in group_results(gid, engine=engine)] == [{"i": i} for i in range(MEMBERS)]
    with running(engine):
        wait_until(lambda: calls)
        time.sleep(0.3)
    assert calls == [gid]

"""Group members are enqueued like any added job: each fires ``enqueued`` once, and the
callback's own events follow when it runs."""

from __future__ import annotations

from oqronkit import Engine, job_spec
from tests.engine.queue.conftest import fast_services, running, wait_until


def test_members_fire_enqueued_once_and_the_callback_completes(engine: Engine):
    seen: list[tuple[str, str, str]] = []
    engine.on("enqueued", lambda event: seen.append(("enqueued", event.queue, event.job_id)))
    engine.on("completed", lambda event: seen.append(("completed", event.queue, event.job_id)))
    work = engine.queue("work", handler=lambda ctx: ctx.data)
    engine.queue("done", handler=lambda ctx: "reported")
    gid = engine.group([job_spec(work, i) for i in range(3)], on_complete=job_spec("done", None))
    enqueued = [job_id for kind, queue, job_id in seen if kind == "enqueued"]
    assert len(enqueued) == len(set(enqueued)) == 3
    with running(engine) as process:
        fast_services(process)
        wait_until(lambda: ("completed", "done", f"{gid}:onComplete") in seen)
    completed = [job_id for kind, queue, job_id in seen if kind == "completed" and queue == "work"]
    assert sorted(completed) == sorted(enqueued)

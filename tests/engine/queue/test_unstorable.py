"""Records the durable plane refuses or cannot take now: a dead letter or a retry over
the record size limit, a dead letter written during an outage. None may lose the job."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from oqronkit import BackendUnavailable, Engine

from .conftest import built_engine, running, wait_until

LIMIT = 8_000
BIG_PAYLOAD = {"blob": "x" * 3_800}  # within the payload limit (the record limit less 4,096)


@pytest.fixture
def small_engine(mode: str, request: pytest.FixtureRequest, tmp_path, scope_names) -> Iterator[Engine]:
    with built_engine(mode, request, tmp_path, scope_names[0], max_record_bytes=LIMIT) as eng:
        yield eng


def loud(ctx):
    raise RuntimeError("refused: " + "y" * 5_000)  # a message longer than the room left


def test_a_dead_letter_over_the_size_limit_is_kept_with_less_error_detail(small_engine: Engine):
    """It used to be left out (or, before that, held with the job's deletion until the
    next write went through without it): the job vanished."""
    q = small_engine.queue("big", handler=loud, retries=0)
    job = q.add(BIG_PAYLOAD)
    with running(small_engine):
        wait_until(lambda: small_engine.durable.get("queue_dlq:big", job.id) is not None)
    dead = small_engine.durable.get("queue_dlq:big", job.id).value
    assert dead["data"] == BIG_PAYLOAD and dead["status"] == "dead"
    assert dead["lastError"]["message"].startswith("refused: yyy") and len(dead["lastError"]["message"]) == 500
    assert small_engine.durable.get("queue_job:big", job.id) is None
    assert q.counts() == {"waiting": 0, "delayed": 0, "active": 0, "dead": 1}


def test_a_retry_over_the_size_limit_is_stored_with_less_error_detail(small_engine: Engine):
    q = small_engine.queue("big", handler=loud, retries=2, backoff=0)
    job = q.add(BIG_PAYLOAD)
    with running(small_engine):
        wait_until(lambda: small_engine.durable.get("queue_dlq:big", job.id) is not None, timeout=20)
    dead = small_engine.durable.get("queue_dlq:big", job.id).value
    assert dead["attempts"] == 3 and dead["data"] == BIG_PAYLOAD
    # 3,800 bytes of payload leave room for the last error only, cut short.
    assert [e["attempt"] for e in dead["errors"]] == [3] and dead["lastError"]["attempt"] == 3
    assert dead["lastError"]["message"].startswith("refused: yyy")


def test_a_dead_letter_written_during_an_outage_is_held_with_the_job_deletion(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
):
    """The held writes used to keep only run records: the dead letter was dropped, the
    job's deletion kept, and the next write that went through deleted the job."""
    apply = engine.durable.apply
    refused = []

    def first_dead_letter_fails(*, puts=(), deletes=()):
        puts = list(puts)
        if not refused and any(w.namespace.startswith("queue_dlq:") for w in puts):
            refused.append(puts)
            raise BackendUnavailable("durable plane down (test)")
        return apply(puts=puts, deletes=deletes)

    monkeypatch.setattr(engine.durable, "apply", first_dead_letter_fails)
    dead = []
    q = engine.queue("doomed", handler=loud, retries=0, on_dead=lambda job, error: dead.append(job.id))
    job = q.add({"n": 1})
    with running(engine):
        wait_until(lambda: refused)
        wait_until(lambda: engine.durable.get("queue_dlq:doomed", job.id) is not None)
        wait_until(lambda: dead)  # the hook runs once the held dead letter lands
    assert engine.durable.get("queue_job:doomed", job.id) is None
    assert engine.durable.get("queue_dlq:doomed", job.id).value["data"] == {"n": 1}
    assert dead == [job.id]

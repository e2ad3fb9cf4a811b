"""Records the engine writes on every job are built with their keys in jsonb's order
(oqronkit.codec.jsonb_key_order), so Postgres skips sorting them while parsing."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import psycopg

from oqronkit.codec import jsonb_key_order
from oqronkit.queues.jobs import Job
from oqronkit.queues.runs import add_log, add_timeline, describe_error, finish_run, new_run
from tests.services import require_postgres


def in_jsonb_order(keys: list[str]) -> bool:
    return keys == sorted(keys, key=jsonb_key_order)


def test_the_order_is_the_one_postgres_stores() -> None:
    keys = ["b", "aa", "a", "é", "z", "zz", "日本", "ab", "B", "id", "app", "jobId", "error", "\u00ff", "ä"]
    with psycopg.connect(require_postgres()) as conn:
        stored = conn.execute("SELECT array_agg(k) FROM jsonb_object_keys(%s::jsonb) AS k",
                              (json.dumps(dict.fromkeys(keys, 1)),)).fetchone()[0]
    assert stored == sorted(keys, key=jsonb_key_order)


def built_objects(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The run and every object inside it that the engine builds (not input/output)."""
    return [run, *run["timeline"], *run["logs"], *([run["error"]] if run["error"] else [])]


def test_runs_are_built_in_jsonb_order() -> None:
    for job_id in (None, "j1"):
        for correlation_id, wait_ms, caused_by in ((None, None, None), ("c1", 12, "r0")):
            run = new_run(name="emails", module="queue", trigger="queue", input={"z": 1, "a": 2}, attempts=1,
                          app="app", environment="prod", worker_id="w", job_id=job_id, correlation_id=correlation_id,
                          wait_ms=wait_ms, caused_by=caused_by)
            add_log(run, "info", "hello", limit=10)
            add_timeline(run, "running", "held", "paused", limit=10)
            finish_run(run, "failed", error=describe_error(ValueError("boom")))
            for obj in built_objects(run):
                assert in_jsonb_order(list(obj)), list(obj)
            assert ("jobId" in run) == (job_id is not None)
            assert ("correlationId" in run) == (correlation_id is not None)
            assert run["progressPercent"] == 0 and run["status"] == "failed" and run["input"] == {"z": 1, "a": 2}


def test_job_values_are_built_in_jsonb_order() -> None:
    value = Job(id="j", queue="q", data={"b": 1, "a": 1}).to_value()
    assert in_jsonb_order(list(value))
    assert Job.from_value(value).to_value() == value


def test_a_job_reads_the_same_in_any_key_order() -> None:
    """from_value pairs a full row in jsonb's order without looking keys up; any other
    row (keys missing, unknown or reordered) reads key by key, to the same job."""
    job = Job(id="j", queue="q", data={"b": 1}, attempts=2, tags=["t"], group="g")
    value = dict(job.to_value())
    shuffled = dict(reversed(list(value.items())))
    assert Job.from_value(shuffled) == Job.from_value(value) == job
    partial = {k: v for k, v in value.items() if k not in ("tags", "groupId")} | {"unknownKey": 1}
    assert Job.from_value(partial) == dataclasses.replace(job, tags=[], group=None)

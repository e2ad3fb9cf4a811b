"""What the page bench seeds beside bench/seed.py and bench/topic_seed.py, so that the
pages of issue 37 have something real to show: one correlation id of 1,000 entries
among the 1M runs (bench/trace.py's trace, by SQL), a tracked bulk operation, a group
of 50 jobs and a replay set of 100 runs. Each is written once: a later run finds it
and reuses it (the seed's marker records its ids).
"""

from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import seed  # bench/seed.py

from oqronkit.namespaces import QUEUE

MARKER = ("bench", "page_extras")
EXTRAS_VERSION = 1
TRACE_ID = "bench-trace-1000"
TRACE_ENTRIES = 1000
GROUP_SIZE = 50
REPLAYED = 100


@dataclass
class Extras:
    """The ids the pages of issue 37 are timed with."""

    correlation_id: str
    op_id: str
    group_id: str
    set_id: str


def ensure_extras(url: str, engine: Any, sample: seed.SeedSummary) -> Extras:
    """The extras of this seed: read from the marker, or written now (``engine`` is
    the board's engine in the seed's project and environment)."""
    found = engine.durable.get(*MARKER)
    value = dict(found.value) if found is not None else {}
    if value.pop("version", None) == EXTRAS_VERSION and value.pop("seeded_at", None) == sample.seeded_at:
        return Extras(**value)
    extras = Extras(correlation_id=_seed_trace(url), op_id=_operation(engine, sample),
                    group_id=_group(engine, sample), set_id=_replay_set(engine, sample))
    engine.durable.put(*MARKER, {**asdict(extras), "version": EXTRAS_VERSION, "seeded_at": sample.seeded_at})
    seed.analyze(url)
    return extras


def _trace_module() -> Any:
    """bench/trace.py, loaded by path: ``import trace`` may find the standard library's."""
    spec = importlib.util.spec_from_file_location("bench_trace", Path(__file__).with_name("trace.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _seed_trace(url: str) -> str:
    """1,000 entries of one correlation id (a root run, its jobs and their two runs
    each, its messages and log lines), published an hour ago."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM oqron_runs WHERE value->>'correlationId' = %s", (TRACE_ID,))
        conn.execute("DELETE FROM oqron_jobs WHERE value->>'correlationId' = %s", (TRACE_ID,))
        conn.execute("DELETE FROM oqron_records WHERE value->>'correlationId' = %s", (TRACE_ID,))
        _trace_module().seed_trace(conn, project=seed.PROJECT, environment=seed.ENVIRONMENT,
                                   base=seed.SeedPlan().now - 3_600_000, cid=TRACE_ID, entries=TRACE_ENTRIES,
                                   topic="bench-trace")
    print(f"seeded a trace of {TRACE_ENTRIES:,} entries ({TRACE_ID})")
    return TRACE_ID


def _operation(engine: Any, sample: seed.SeedSummary) -> str:
    """A bulk retry of one error group's dead letters; nothing runs it here (no leader)."""
    from oqronkit.operations import Operations

    op = Operations(engine).create("retry", user="bench-operator", source="bench",
                                   fingerprint=sample.sample_fingerprint)
    return op.id


def _group(engine: Any, sample: seed.SeedSummary) -> str:
    members = [(sample.sample_waiting_queue, {"part": i}) for i in range(GROUP_SIZE)]
    return str(engine.group(members, name="bench group"))


def _replay_set(engine: Any, sample: seed.SeedSummary) -> str:
    """The last completed runs of the waiting queue's handler, replayed (its queue
    record says replayable, as a worker declaring ``replayable=True`` writes it)."""
    from oqronkit.replay.create import replay

    queue = sample.sample_waiting_queue
    record = engine.durable.get(QUEUE, queue)
    engine.durable.put(QUEUE, queue, {**(record.value if record is not None else {}), "replayable": True})
    return replay(engine, handler=queue, last=REPLAYED, user="bench-operator", source="bench")

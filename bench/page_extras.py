"""What the page bench seeds beside bench/seed.py and bench/topic_seed.py, so that every
page has something real to show: one correlation id of 1,000 entries among the 1M runs
(bench/trace.py's trace, by SQL), a tracked bulk operation, a group of 50 jobs, a replay
set of 100 runs, the definitions of the seed's crons (whose runs are among the 1M) and of
a schedule, a webhook with two endpoints and a few hundred deliveries waiting (no
worker sends them), rate limiters with keys in use and caches with entries and stats.
Each is written once: a later run finds it and reuses it (the seed's marker records its
ids). What is still skipped is POST-only (actions) or the API's 404 for unknown paths.
"""

from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import seed  # bench/seed.py

from oqronkit.namespaces import QUEUE

MARKER = ("bench", "page_extras")
EXTRAS_VERSION = 3
TRACE_ID = "bench-trace-1000"
TRACE_ENTRIES = 1000
GROUP_SIZE = 50
REPLAYED = 100
SCHEDULE = "weekly-digest"
WEBHOOK, ENDPOINTS, EVENTS = "bench-hooks", ("shop", "crm"), 200
LIMITERS, CACHES, KEYS = 8, 8, 200


@dataclass
class Extras:
    """The ids the pages of issue 37 are timed with."""

    correlation_id: str
    op_id: str
    group_id: str
    set_id: str
    cron: str
    schedule: str
    webhook: str
    endpoint: str
    delivery_id: str
    limiter: str


def ensure_extras(url: str, engine: Any, sample: seed.SeedSummary) -> Extras:
    """The extras of this seed: read from the marker, or written now (``engine`` is
    the board's engine in the seed's project and environment)."""
    found = engine.durable.get(*MARKER)
    value = dict(found.value) if found is not None else {}
    if value.pop("version", None) == EXTRAS_VERSION and value.pop("seeded_at", None) == sample.seeded_at:
        return Extras(**value)
    extras = Extras(correlation_id=_seed_trace(url), op_id=_operation(engine, sample),
                    group_id=_group(engine, sample), set_id=_replay_set(engine, sample),
                    cron=_schedules(engine), schedule=SCHEDULE, webhook=WEBHOOK, endpoint=ENDPOINTS[0],
                    delivery_id=_webhook(engine), limiter=_limits_and_caches(engine))
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


def _schedules(engine: Any) -> str:
    """The seed's crons declared as a worker declares them (their runs are the seed's
    ``module="cron"`` runs), and a schedule without runs yet; returns a cron's name."""
    from oqronkit.clock import now_ms
    from oqronkit.scheduler.control import store_definition
    from oqronkit.scheduler.definition import build_definition

    now = now_ms()
    expressions = {"nightly-cleanup": "0 3 * * *", "hourly-rollup": "0 * * * *",
                   "refresh-exchange-rates": "*/5 * * * *"}
    for name in seed.CRONS:
        store_definition(engine, build_definition("cron", name, expression=expressions.get(name, "0 * * * *"),
                                                  handler=f"bench.{name}", now=now), now)
    store_definition(engine, build_definition("schedule", SCHEDULE, every=7 * 86_400, handler="bench.digest", now=now),
                     now)
    return seed.CRONS[0]


def _webhook(engine: Any) -> str:
    """A webhook with endpoints on loopback's discard port and EVENTS events fired to it;
    returns one delivery's id."""
    from oqronkit.webhooks import new_secret

    hook = engine.webhook(WEBHOOK, secret=new_secret(), allow_private=True,
                          endpoints=[{"id": e, "url": f"http://127.0.0.1:9/{e}", "allow_private": True}
                                     for e in ENDPOINTS])
    hook.endpoints()  # the control record and the declared endpoints, as a worker's first fire writes them
    ids: list[str] = []
    for i in range(EVENTS):
        ids += hook.fire("order.paid" if i % 2 else "invoice.sent", {"order": i})
    print(f"seeded webhook {WEBHOOK}: {len(ids)} deliveries waiting")
    return ids[0]


def _limits_and_caches(engine: Any) -> str:
    """LIMITERS limiters, each checked for KEYS keys (some refused, one banned), and
    CACHES caches with KEYS entries, hits and misses; returns a limiter's name (its key
    ``user-1`` is in use)."""
    from oqronkit.caches.cache import Cache
    from oqronkit.ratelimit import RateLimiter

    for n in range(LIMITERS):
        limiter = RateLimiter(f"api-{n}", tiers=[(5, 60), (100, 3600)], ban=(3, 60, 600), engine=engine)
        for key in range(KEYS):
            for _ in range(1 + key % 7):
                limiter.check(f"user-{key}")
    for n in range(CACHES):
        cache = Cache(f"cache-{n}", ttl=3600, tags=["people"], engine=engine)
        for key in range(KEYS):
            cache.set(f"user:{key}", {"n": key})
            cache.get(f"user:{key}")
            cache.get(f"user:{key + KEYS}")
        cache.stats_counters.flush()
    print(f"seeded {LIMITERS} limiters and {CACHES} caches of {KEYS} keys")
    return "api-0"

"""Seed the board benchmark's topics: 1,000,000 retained messages across 20 topics.

    .venv/bin/python bench/topic_seed.py [--database-url URL] [--messages 1000000] [--topics 20] [--reseed]

``bench/seed.py`` and ``bench/board_pages.py`` call :func:`ensure_topics_seeded` after
the runs and jobs; this entry point seeds only the topics (into the same database).

Messages go through the engine's log (``oqronkit.topics.log.append``: a partition's
offsets from its counter, one transaction per batch), with ``publishedAt`` spread over
the last two days in offset order, as a steady producer leaves them; each topic's last
message is published with ``Topic.publish``, which also writes the topic's definition
and state. Topics have 1 to 8 partitions and messages are keyed by customer (the
engine's partitioner). Each topic has three consumer groups: ``audit`` caught up with
a few deliveries in flight, ``billing`` lagging with dead letters (a failed run each;
every fourth topic has 2,000 of them), ``search`` paused far behind.

A marker record (namespace ``bench``, id ``topics``) remembers the sizes: a later call
reuses the data unless ``--reseed`` is given or the sizes differ (the topic rows alone
are then deleted and written again).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import seed  # bench/seed.py, beside this file

import oqronkit
from oqronkit import Job, OqronConfig, RecordWrite, Topic
from oqronkit.backends.hot_types import Signal
from oqronkit.namespaces import RUNS
from oqronkit.topics import groups, log
from oqronkit.topics.publish import partition_for
from oqronkit.topics.subscription import delivery_queue_name

MARKER = ("bench", "topics")
SEED_VERSION = 1
SPAN_MS = 2 * seed.DAY_MS
PARTITIONS = (1, 2, 3, 4, 6, 8)
CUSTOMERS = 5_000
IN_FLIGHT = 20
GROUPS = ("audit", "billing", "search")
EVENTS = ("order.created", "order.paid", "order.shipped", "order.refunded", "cart.abandoned")


@dataclass
class TopicPlan:
    messages: int = 1_000_000
    topics: int = 20

    def names(self) -> list[str]:
        kinds = ("orders", "payments", "shipments", "carts", "customers")
        return [f"{kinds[i % len(kinds)]}-{i:02d}" for i in range(self.topics)]


@dataclass
class TopicSummary:
    """What the page bench needs: a topic, a group, a message, a key, a correlation id."""

    messages: int
    topics: int
    sample_topic: str
    sample_group: str
    sample_message: str
    sample_key: str
    sample_correlation: str
    reused: bool = False

    def to_value(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "reused"} | {"version": SEED_VERSION}


def _draft(rng: random.Random, at: int) -> tuple[str, log.Draft]:
    customer = f"cus_{rng.randrange(CUSTOMERS):05d}"
    order = f"ord_{seed._hex(rng, 10)}"
    payload = {"event": rng.choice(EVENTS), "orderId": order, "customer": customer,
               "amountCents": rng.randint(500, 90_000), "currency": "EUR", "items": rng.randint(1, 6)}
    headers = {"source": "checkout", "traceparent": f"00-{seed._hex(rng, 32)}-{seed._hex(rng, 16)}-01"}
    return customer, log.Draft(id=seed.run_id(rng, at), key=customer, payload=payload, headers=headers,
                               correlation_id=order, idempotency_key=None, published_at=at)


def _publish_topic(plane: Any, engine: oqronkit.Engine, rng: random.Random, name: str, partitions: int,
                   count: int, now: int) -> list[dict[str, Any]]:
    """``count`` messages over the last two days, in offset order; a few as samples."""
    pending: dict[int, list[log.Draft]] = defaultdict(list)
    kept: list[dict[str, Any]] = []
    start = now - SPAN_MS
    for n in range(count - 1):
        key, draft = _draft(rng, start + n * SPAN_MS // count)
        partition = partition_for(key, None, partitions)
        pending[partition].append(draft)
        if n % 997 == 0:
            kept.append({"id": draft.id, "key": key, "correlation": draft.correlation_id, "partition": partition})
        if len(pending[partition]) >= seed.BATCH:
            log.append(plane, name, partition, pending.pop(partition))
    for partition, drafts in pending.items():
        log.append(plane, name, partition, drafts)
    # The newest through the public API: it declares the topic (definition and state).
    Topic(name, partitions=partitions, engine=engine).publish({"event": "order.created", "orderId": "ord_last"},
                                                              key="cus_00000", correlation_id="ord_last")
    return kept


def _groups(plane: Any, rng: random.Random, name: str, partitions: int, heavy: bool, now: int,
            writer: seed.BatchWriter, signals: list[tuple[str, list[Signal]]]) -> None:
    """The topic's three groups at their positions, with in-flight jobs and dead letters."""
    nexts = log.next_offsets(plane, name, partitions)
    for group in GROUPS:
        groups.ensure(plane, name, group, partitions, "earliest")
        if group == "audit":
            cursor = {str(p): n - 1 for p, n in enumerate(nexts)}
        elif group == "billing":
            cursor = {str(p): max(n - 1 - rng.randint(0, 400), -1) for p, n in enumerate(nexts)}
        else:
            cursor = {str(p): max(n // 3, 0) - 1 for p, n in enumerate(nexts)}
        groups.update(plane, name, group, partitions, cursor=cursor, paused=group == "search")
    queue = delivery_queue_name(name, "audit")
    recent = log.read(plane, name, 0, after=max(nexts[0] - 1 - IN_FLIGHT, -1), limit=IN_FLIGHT)
    for record in recent:
        job = Job(id=record.id, queue=queue, data=_delivery(record.value), created_at=now, updated_at=now)
        writer.add(RecordWrite(job.namespace, job.id, job.to_value()))
    signals.append((queue, [Signal(r.id, 0, None) for r in recent]))
    _dead_letters(plane, rng, name, 2_000 if heavy else 50, writer, now)


def _delivery(message: dict[str, Any]) -> dict[str, Any]:
    return {"topic": message["topic"], "messageId": message["id"], "partition": message["partition"],
            "offset": message["offset"], "key": message.get("key"), "payload": message.get("payload"),
            "headers": message.get("headers") or {}, "publishedAt": message["publishedAt"],
            "correlationId": message.get("correlationId")}


def _dead_letters(plane: Any, rng: random.Random, name: str, count: int, writer: seed.BatchWriter, now: int) -> None:
    """``billing``'s dead letters: the oldest messages of partition 0, one failed run each."""
    queue = delivery_queue_name(name, "billing")
    for record in log.read(plane, name, 0, after=-1, limit=count):
        died = int(record.value["publishedAt"]) + 90_000
        error = {"type": "InvoiceRejected", "message": f"invoice service rejected {record.value['correlationId']}: "
                 "VAT id missing", "traceback": "Traceback (most recent call last):\nInvoiceRejected\n", "ts": died}
        rid = seed.run_id(rng, died - 500)
        run = seed.run_value(rng, rid=rid, name=queue, module="topic", status="failed", started=died - 500,
                             data=_delivery(record.value), attempts=3, job_id=record.id, error=error)
        run.update(trigger="topic", topic=name, group="billing", messageId=record.id)
        job = Job(id=record.id, queue=queue, data=_delivery(record.value), created_at=died - 60_000,
                  max_attempts=3, attempts=3)
        job.record_error({**error, "attempt": 3, "runId": rid})
        job.run_id = rid
        job.die("failed on attempt 3 of 3", died)
        writer.add(RecordWrite(job.namespace, job.id, job.to_value()))
        writer.add(RecordWrite(RUNS, rid, run))


def seed_topics(url: str, plan: TopicPlan) -> TopicSummary:
    config = OqronConfig(mode="postgres", database_url=url, project=seed.PROJECT, environment=seed.ENVIRONMENT)
    engine = oqronkit.Engine(config, registry=oqronkit.Registry())
    plane, now, rng = engine.durable, int(time.time() * 1000), random.Random(20250705)
    began = time.perf_counter()
    writer = seed.BatchWriter(plane)
    signals: list[tuple[str, list[Signal]]] = []
    per_topic = plan.messages // max(plan.topics, 1)
    samples: list[dict[str, Any]] = []
    print(f"seeding {plan.messages:,} messages across {plan.topics} topics")
    for i, name in enumerate(plan.names()):
        partitions = PARTITIONS[i % len(PARTITIONS)]
        kept = _publish_topic(plane, engine, rng, name, partitions, per_topic, now)
        samples = samples or kept
        _groups(plane, rng, name, partitions, heavy=i % 4 == 0, now=now, writer=writer, signals=signals)
        seed._progress("messages", (i + 1) * per_topic, plan.messages, began)
    writer.close()
    for queue, batch in signals:
        engine.hot.signal(queue, batch, now)
    sample = samples[len(samples) // 2]
    summary = TopicSummary(messages=plan.messages, topics=plan.topics, sample_topic=plan.names()[0],
                           sample_group="billing", sample_message=sample["id"], sample_key=sample["key"],
                           sample_correlation=sample["correlation"])
    plane.put(*MARKER, summary.to_value())
    print(f"\n  topics written in {time.perf_counter() - began:.0f} s")
    engine.close()
    return summary


def existing(url: str, plan: TopicPlan) -> TopicSummary | None:
    plane = oqronkit.open_durable(OqronConfig(mode="postgres", database_url=url, project=seed.PROJECT,
                                              environment=seed.ENVIRONMENT))
    try:
        found = plane.get(*MARKER)
    finally:
        plane.close()
    value = dict(found.value) if found is not None else {}
    if value.pop("version", None) != SEED_VERSION or (value.get("messages"), value.get("topics")) != \
            (plan.messages, plan.topics):
        return None
    return TopicSummary(**value, reused=True)


def delete_topics(url: str) -> None:
    """Delete this scope's topic rows (messages, records, delivery jobs and runs)."""
    import psycopg

    if "bench" not in seed.database_name(url):
        raise SystemExit("refusing to delete topic rows outside a bench database")
    scope = (seed.PROJECT, seed.ENVIRONMENT)
    where = "project = %s AND environment = %s AND "
    with psycopg.connect(url, autocommit=True) as conn:
        for table, condition in (
            ("oqron_runs", "record_kind = 'message'"),
            ("oqron_runs", "namespace = 'runs' AND value->>'module' = 'topic'"),
            ("oqron_records", "(namespace IN ('topic', 'topic_state') OR namespace LIKE 'topic\\_groups:%%')"),
            ("oqron_records", "namespace = 'bench' AND id = 'topics'"),
            ("oqron_jobs", "namespace LIKE 'queue\\_%%:%%@%%'"),
        ):
            conn.execute(f"DELETE FROM {table} WHERE {where}{condition}", scope)  # fixed names and conditions


def ensure_topics_seeded(url: str, plan: TopicPlan, *, reseed: bool = False) -> TopicSummary:
    summary = existing(url, plan)  # opens the durable plane: the tables exist from here on
    if summary is not None and not reseed:
        print(f"reusing the topic seed ({summary.messages:,} messages in {summary.topics} topics)")
        return summary
    delete_topics(url)
    summary = seed_topics(url, plan)
    seed.analyze(url)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=seed.DEFAULT_URL)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--reseed", action="store_true", help="delete the topic rows and seed them again")
    args = parser.parse_args(argv)
    seed.ensure_database(args.database_url)
    print(ensure_topics_seeded(args.database_url, TopicPlan(args.messages, args.topics), reseed=args.reseed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

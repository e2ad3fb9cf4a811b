"""Keep a reused bench seed as busy as a freshly written one, up to now.

The seed writes everything at or before its own time: 40 % of its runs in the day before
it and its messages over the two days before it. An hour after seeding, the last hour the
pages read ("last hour" counts, the overview's minutes, a topic's rate) is empty, and the
pages look faster than they would on a busy app. ``top_up`` appends what a busy app would
have written since the seed or the last top-up, at the seed's own density: finished runs
(about 16,700 an hour at the default sizes, 5 % failed) and each topic's messages through
the engine's log (about 1,000 an hour a topic), with the caught-up group kept caught up
and the lagging one lagging by what it lagged. A marker remembers how far it got.

``board_pages.py`` calls it after ``ensure_seeded``; on its own:

    .venv/bin/python bench/top_up.py [--database-url URL]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import seed  # bench/seed.py, beside this file
import topic_seed  # bench/topic_seed.py

import oqronkit
from oqronkit import OqronConfig, RecordWrite
from oqronkit.namespaces import RUNS
from oqronkit.topics import groups, log
from oqronkit.topics.publish import partition_for

MARKER = ("bench", "top_up")
# Less than this since the last top-up: nothing to add (a page's last hour barely moves).
MIN_GAP_MS = 60_000
RECENT_SHARE = 0.40  # seed.started_at: the share of the runs in the last day


def top_up(url: str, plan: seed.SeedPlan, summary: seed.SeedSummary, topics: topic_seed.TopicPlan | None) -> None:
    config = OqronConfig(mode="postgres", database_url=url, project=seed.PROJECT, environment=seed.ENVIRONMENT)
    engine = oqronkit.Engine(config, registry=oqronkit.Registry())
    try:
        plane, now = engine.durable, int(time.time() * 1000)
        found = plane.get(*MARKER)
        marker = dict(found.value) if found is not None else {}
        since = int(marker["until"]) if marker.get("seededAt") == summary.seeded_at else summary.seeded_at
        if now - since < MIN_GAP_MS:
            return
        began = time.perf_counter()
        rng = random.Random(since)
        writer = seed.BatchWriter(plane)
        count = int(RECENT_SHARE * plan.runs * (now - since) / seed.DAY_MS)
        for run in recent_runs(rng, count, since, now, plan.failed_share):
            writer.add(RecordWrite(RUNS, run["id"], run))
        writer.close()
        messages = _messages(plane, rng, topics, since, now) if topics is not None else 0
        plane.put(*MARKER, {"seededAt": summary.seeded_at, "until": now})
        print(f"topped the seed up by {(now - since) / 60_000:.0f} min: {count:,} runs, {messages:,} messages "
              f"({time.perf_counter() - began:.1f} s)")
    finally:
        engine.close()


def recent_runs(rng: random.Random, count: int, since: int, until: int,
                failed_share: float) -> Iterator[dict[str, Any]]:
    """``count`` finished runs started in [since, until), shaped like seed.history_runs'."""
    for i in range(count):
        started = since + int(rng.random() * (until - since))
        if rng.random() < 0.05:
            name, module, job_id = rng.choice(seed.CRONS), "cron", None
        else:
            name = seed.pick_queue(rng)
            module, job_id = ("worker" if rng.random() < 0.1 else "queue"), f"j{started:012x}{seed._hex(rng, 8)}"
        status, error = "completed", None
        if module != "cron" and rng.random() < failed_share:
            status, error = "failed", seed.make_error(rng, name, started)
        elif rng.random() < 0.005:
            status = "cancelled"
        queue = name if module != "cron" else "emails"
        yield seed.run_value(rng, rid=seed.run_id(rng, started), name=name, module=module, status=status,
                             started=started, data=seed.job_data(rng, queue, i),
                             attempts=1 if status != "failed" else 2, job_id=job_id, error=error)


def _messages(plane: Any, rng: random.Random, plan: topic_seed.TopicPlan, since: int, now: int) -> int:
    """Each topic's messages for [since, now) at the seed's density, in offset order; the
    groups that were caught up or lagging a little stay so (the paused one falls behind)."""
    per_topic = int(plan.messages // max(plan.topics, 1) * (now - since) / topic_seed.SPAN_MS)
    for i, name in enumerate(plan.names()):
        partitions = topic_seed.PARTITIONS[i % len(topic_seed.PARTITIONS)]
        before = log.next_offsets(plane, name, partitions)
        pending: dict[int, list[log.Draft]] = defaultdict(list)
        for n in range(per_topic):
            key, draft = topic_seed._draft(rng, since + n * (now - since) // max(per_topic, 1))
            pending[partition_for(key, None, partitions)].append(draft)
        for partition, drafts in pending.items():
            for start in range(0, len(drafts), seed.BATCH):
                log.append(plane, name, partition, drafts[start:start + seed.BATCH])
        after = log.next_offsets(plane, name, partitions)
        for group in ("audit", "billing"):
            found = groups.load(plane, name, group)
            cursor = dict(found.get("cursor") or {}) if found is not None else {}
            moved = {str(p): int(cursor.get(str(p), -1)) + after[p] - before[p] for p in range(partitions)}
            groups.update(plane, name, group, partitions, cursor=moved)
    return per_topic * plan.topics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=seed.DEFAULT_URL)
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--jobs", type=int, default=200_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--topics", type=int, default=20)
    args = parser.parse_args(argv)
    plan = seed.SeedPlan(runs=args.runs, jobs=args.jobs)
    summary = seed.existing_seed(args.database_url, plan)
    if summary is None:
        raise SystemExit("no reusable seed of these sizes: run bench/board_pages.py (it seeds) first")
    topics = topic_seed.TopicPlan(args.messages, args.topics) if args.messages else None
    top_up(args.database_url, plan, summary, topics)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

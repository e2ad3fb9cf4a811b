"""Time the board's ``/metrics`` scrape (``oqronboard/metrics.py``) on Postgres at scale:
1,000,000 runs, 200,000 jobs (20,000 of them dead letters) over six queues, with their
hot-plane rows, 20 crons, a topic with two consumer groups, a webhook, a leader and
eight live workers.

    .venv/bin/python bench/metrics_scrape.py [--database-url URL] [--runs 1000000]
        [--jobs 200000] [--dead 20000] [--scrapes 30] [--keep]

Rows are seeded in bulk by ``bench/metrics_seed.sql`` (``INSERT ... SELECT`` over
``generate_series``) into a private schema of the database (dropped afterwards unless
``--keep``), then ``ANALYZE``d; crons, the topic and the webhook go through the engine.
Each scrape is a full Django request (``django.test.Client``, the bearer token path,
every middleware); the figure is the median of ``--scrapes`` after three warm-ups, with
each SQL statement's time from one more scrape. Target (issue 23): under 200 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import oqronkit
from oqronkit.clock import now_ms
from oqronkit.live import publish_worker
from oqronkit.scheduler.control import store_definition
from oqronkit.scheduler.definition import build_definition
from oqronkit.services.leader import LEADER_LOCK
from oqronkit.topics import groups
from oqronkit.webhooks import new_secret
from oqronkit.webhooks.webhook import Webhook

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = os.environ.get("OQRON_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
PROJECT, ENVIRONMENT = "bench", "production"
TOKEN = "bench-metrics-token-0123456789"
QUEUES = 6


def statements() -> dict[str, str]:
    """bench/metrics_seed.sql's statements by name."""
    found: dict[str, str] = {}
    name = None
    for line in (ROOT / "bench" / "metrics_seed.sql").read_text().splitlines():
        if line.startswith("-- name: "):
            name = line.removeprefix("-- name: ").strip()
            found[name] = ""
        elif name and not line.startswith("--"):
            found[name] += line + "\n"
    return found


def seed(url: str, engine: oqronkit.Engine, args: argparse.Namespace) -> None:
    engine.durable  # noqa: B018 - opening the planes creates the engine's tables
    engine.hot  # noqa: B018
    now = now_ms()
    params = {"project": PROJECT, "environment": ENVIRONMENT, "runs": args.runs, "jobs": args.jobs,
              "dead": args.dead, "queues": QUEUES, "now": now}
    with psycopg.connect(url, autocommit=True) as conn:
        for name, sql in statements().items():
            started = time.perf_counter()
            conn.execute(sql, params)
            print(f"  seeded {name} in {time.perf_counter() - started:.1f} s", flush=True)
    engine.durable.put_many(oqronkit.RecordWrite("queue", f"q{i}", {
        "name": f"q{i}", "paused": i == 5, "concurrency": 10, "strategy": "fifo", "updatedAt": now})
        for i in range(QUEUES))
    for i in range(20):
        store_definition(engine, build_definition("cron", f"cron-{i}", now=now, expression="*/5 * * * *"), now)
    topic = engine.topic("orders", partitions=4)
    topic.publish_many([{"payload": {"n": n}, "key": f"k{n % 7}"} for n in range(500)])
    for group in ("billing", "audit"):
        groups.ensure(engine.durable, "orders", group, 4, "earliest")
    Webhook("shop-events", secret=new_secret(), engine=engine, endpoints=[
        {"id": e, "url": f"https://example.com/{e}", "events": ["**"]} for e in ("crm", "erp")]).endpoints()
    for w in range(8):
        publish_worker(engine.hot, {"id": f"worker-{w}", "queues": {f"q{w % QUEUES}": 10}, "heartbeatAt": now})
    engine.hot.acquire_lock(LEADER_LOCK, "worker-0", ttl_ms=600_000, now=now)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


def scrape_times(url: str, scrapes: int) -> tuple[list[float], list[tuple[float, str]], dict[str, list[float]]]:
    """Each scrape's seconds, one scrape's statements (seconds, SQL) and each section's
    seconds per scrape (``oqron_scrape_section_seconds``)."""
    os.environ.update({"DJANGO_SETTINGS_MODULE": "oqronboard.settings", "OQRON_MODE": "postgres",
                       "OQRON_DATABASE_URL": url, "OQRON_PROJECT": PROJECT, "OQRON_ENVIRONMENT": ENVIRONMENT,
                       "OQRON_METRICS_TOKEN": TOKEN, "DJANGO_ALLOWED_HOSTS": "testserver"})
    import django

    django.setup()
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client, auth = Client(), {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    for _ in range(3):
        response = client.get("/metrics", **auth)
        assert response.status_code == 200, response.content[:500]
    times, sections = [], {}
    for _ in range(scrapes):
        started = time.perf_counter()
        body = client.get("/metrics", **auth).content
        times.append(time.perf_counter() - started)
        for line in body.decode().splitlines():
            if line.startswith("oqron_scrape_section_seconds{"):
                name, value = line.split('"')[1], float(line.rsplit(" ", 1)[1])
                sections.setdefault(name, []).append(value)
    with CaptureQueriesContext(connection) as queries:
        client.get("/metrics", **auth)
    return times, [(float(q["time"]), q["sql"]) for q in queries], sections


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--jobs", type=int, default=200_000)
    parser.add_argument("--dead", type=int, default=20_000)
    parser.add_argument("--scrapes", type=int, default=30)
    parser.add_argument("--keep", action="store_true", help="keep the schema (its name is printed)")
    args = parser.parse_args(argv)
    schema = f"oqron_metrics_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.database_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')  # a generated name, not input
    url = f"{args.database_url}{'&' if '?' in args.database_url else '?'}options=-csearch_path%3D{schema}"
    print(f"schema {schema}: {args.runs:,} runs, {args.jobs:,} jobs ({args.dead:,} dead letters)", flush=True)
    try:
        engine = oqronkit.Engine(oqronkit.OqronConfig(mode="postgres", database_url=url, project=PROJECT,
                                                      environment=ENVIRONMENT), registry=oqronkit.Registry())
        try:
            seed(url, engine, args)
        finally:
            engine.close()
        times, queries, sections = scrape_times(url, args.scrapes)
    finally:
        if not args.keep:
            with psycopg.connect(args.database_url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    ms = sorted(t * 1000 for t in times)
    print(f"\n/metrics over {args.scrapes} scrapes: median {statistics.median(ms):.1f} ms, "
          f"p95 {ms[max(int(len(ms) * 0.95) - 1, 0)]:.1f} ms, min {ms[0]:.1f} ms, max {ms[-1]:.1f} ms")
    print("median per section: " + ", ".join(f"{name} {statistics.median(v) * 1000:.1f} ms"
                                             for name, v in sections.items()))
    print(f"{len(queries)} SQL statements, {sum(t for t, _ in queries) * 1000:.1f} ms in all:")
    for seconds, sql in queries:
        print(f"  {seconds * 1000:7.1f} ms  {' '.join(sql.split())[:110]}")
    print(f"target < 200 ms: {'PASS' if statistics.median(ms) < 200 else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

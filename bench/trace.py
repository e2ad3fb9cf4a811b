"""Server time of one correlation id's timeline: 1,000 entries among 1,000,000 runs.

    .venv/bin/python bench/trace.py [--database-url URL] [--runs 1000000] [--entries 1000]
        [--repeat 20] [--keep]

1. Creates a database of its own (``oqron_bench_trace`` beside the URL's), the engine's
   schema, and seeds by SQL alone (``generate_series``): ``--runs`` runs of which one in
   fifty carries one of 10,000 other correlation ids, 200,000 jobs and 200,000 module
   log lines likewise; then one trace of ``--entries`` entries across the three tables:
   a root run whose handler added jobs, each job with two attempts (runs), messages
   published by the root run, and log lines of the root run. The indexes are built
   afterwards by the engine's own ``ensure_schema`` (as at an existing install's start),
   then ``VACUUM ANALYZE``.
2. Times, interleaved, ``--repeat`` times each: ``Engine.trace`` (the three index reads
   and the nesting), and the board's ``/trace/<id>/`` page and ``/api/v1/trace/<id>/``
   through Django's test client (the server's whole work: view, engine, template).
3. Prints the median and p95 of each, PASS when the page's median is under 50 ms.

Exit status 0 on PASS. Drops its database unless ``--keep``. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TARGET_MS = 50.0
PROJECT, ENVIRONMENT, CID = "bench", "production", "trace-bench-0001"
BASE = 1_765_000_000_000

SEED_RUNS = """
INSERT INTO oqron_runs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT %(project)s, %(environment)s, 'runs', 'run', lpad(to_hex(n), 26, '0'),
       jsonb_build_object('id', lpad(to_hex(n), 26, '0'), 'name', 'q' || n %% 7, 'module', 'queue',
                          'status', 'completed', 'jobId', 'j' || n, 'startedAt', %(base)s + n,
                          'endedAt', %(base)s + n + 40, 'durationMs', 40)
       || CASE WHEN n %% 50 = 0 THEN jsonb_build_object('correlationId', 'other-' || n %% 10000) ELSE '{}' END,
       %(base)s + n
FROM generate_series(1, %(rows)s) AS n
"""
SEED_JOBS = """
INSERT INTO oqron_jobs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT %(project)s, %(environment)s, 'queue_job:q' || n %% 7, 'job', 'j' || n,
       jsonb_build_object('id', 'j' || n, 'status', 'waiting', 'createdAt', %(base)s + n)
       || CASE WHEN n %% 50 = 0 THEN jsonb_build_object('correlationId', 'other-' || n %% 10000) ELSE '{}' END,
       %(base)s + n
FROM generate_series(1, %(rows)s) AS n
"""
SEED_LOGS = """
INSERT INTO oqron_records (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT %(project)s, %(environment)s, 'module_logs:queue', 'log', 'l' || n,
       jsonb_build_object('at', %(base)s + n, 'level', 'info', 'message', 'line ' || n, 'module', 'queue')
       || CASE WHEN n %% 50 = 0 THEN jsonb_build_object('correlationId', 'other-' || n %% 10000) ELSE '{}' END,
       %(base)s + n
FROM generate_series(1, %(rows)s) AS n
"""
# The trace: root run 'root'; k = 1..jobs jobs it added ('tj<k>', waiting, causedBy root)
# with two runs each ('tr<k>a', 'tr<k>b'); messages and log lines of the root run.
SEED_TRACE = """
INSERT INTO oqron_runs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT %(project)s::text, %(environment)s::text, 'runs', 'run', 'root',
       jsonb_build_object('id', 'root', 'name', 'checkout', 'module', 'queue', 'status', 'completed',
                          'startedAt', %(base)s::bigint, 'endedAt', %(base)s::bigint + 900, 'durationMs', 900,
                          'correlationId', %(cid)s::text),
       %(base)s::bigint;
INSERT INTO oqron_jobs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT %(project)s::text, %(environment)s::text, 'queue_job:emails', 'job', 'tj' || k,
       jsonb_build_object('id', 'tj' || k, 'status', 'waiting', 'createdAt', %(base)s::bigint + k,
                          'correlationId', %(cid)s::text, 'causedBy', 'root'),
       %(base)s::bigint + k
FROM generate_series(1, %(jobs)s) AS k;
INSERT INTO oqron_runs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT %(project)s::text, %(environment)s::text, 'runs', 'run', 'tr' || k || a,
       jsonb_build_object('id', 'tr' || k || a, 'name', 'emails', 'module', 'queue', 'jobId', 'tj' || k,
                          'status', CASE a WHEN 'a' THEN 'failed' ELSE 'completed' END,
                          'startedAt', %(base)s::bigint + 1000 + k * 3, 'endedAt', %(base)s::bigint + 1020 + k * 3,
                          'durationMs', 20, 'correlationId', %(cid)s::text, 'causedBy', 'root'),
       %(base)s::bigint + 1000 + k * 3
FROM generate_series(1, %(jobs)s) AS k, unnest(ARRAY['a', 'b']) AS a;
INSERT INTO oqron_runs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT %(project)s::text, %(environment)s::text, 'topic_msg:' || %(topic)s::text, 'message', 'tm' || k,
       jsonb_build_object('id', 'tm' || k, 'topic', %(topic)s::text, 'partition', 0, 'offset', k,
                          'publishedAt', %(base)s::bigint + 500 + k, 'correlationId', %(cid)s::text,
                          'causedBy', 'root'),
       %(base)s::bigint + 500 + k
FROM generate_series(1, %(messages)s) AS k;
INSERT INTO oqron_records (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT %(project)s::text, %(environment)s::text, 'module_logs:queue', 'log', 'tl' || k,
       jsonb_build_object('at', %(base)s::bigint + 10 + k, 'level', 'info', 'message', 'step ' || k, 'module', 'queue',
                          'correlationId', %(cid)s::text, 'runId', 'root'),
       %(base)s::bigint + 10 + k
FROM generate_series(1, %(logs)s) AS k;
"""


def bench_url(url: str, name: str) -> str:
    return url.rsplit("/", 1)[0] + "/" + name


def create_database(url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(psycopg.sql.SQL("DROP DATABASE IF EXISTS {}").format(psycopg.sql.Identifier(name)))
        conn.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(name)))


def drop_database(url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(psycopg.sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(psycopg.sql.Identifier(name)))


def seed_trace(conn: Any, *, project: str, environment: str, base: int, cid: str, entries: int,
               topic: str = "orders") -> None:
    """One trace of ``entries`` entries (SEED_TRACE) on an open autocommit connection:
    a root run, its jobs with two runs each, its messages on ``topic`` and its log lines."""
    jobs = (entries - 1) // 5  # each job: itself and two runs; as many messages and log lines again
    messages = (entries - 1 - 3 * jobs) // 2
    params = {"project": project, "environment": environment, "base": base, "cid": cid, "jobs": jobs,
              "messages": messages, "logs": entries - 1 - 3 * jobs - messages, "topic": topic}
    for statement in SEED_TRACE.split(";\n"):
        if statement.strip():
            conn.execute(statement, params)


def seed(url: str, *, runs: int, entries: int) -> None:
    """The tables as the module docstring says; the indexes built by ensure_schema."""
    import psycopg

    from oqronkit.backends.postgres import PostgresDurableStore

    store = PostgresDurableStore(url)
    store.ensure_schema()
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        for (name,) in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'public' "
                                    "AND indexname NOT LIKE '%_pkey'").fetchall():
            conn.execute(psycopg.sql.SQL("DROP INDEX {}").format(psycopg.sql.Identifier(name)))
        params = {"project": PROJECT, "environment": ENVIRONMENT, "base": BASE}
        conn.execute(SEED_RUNS, {**params, "rows": runs})
        conn.execute(SEED_JOBS, {**params, "rows": runs // 5})
        conn.execute(SEED_LOGS, {**params, "rows": runs // 5})
        seed_trace(conn, project=PROJECT, environment=ENVIRONMENT, base=BASE, cid=CID, entries=entries)
    store.ensure_schema()
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE oqron_runs, oqron_jobs, oqron_records")
    print(f"seeded {runs:,} runs, {runs // 5:,} jobs, {runs // 5:,} log lines and a trace of {entries:,} "
          f"entries in {time.perf_counter() - started:.0f} s")


def start_django(url: str) -> object:
    os.environ.update({
        "OQRON_MODE": "postgres", "OQRON_DATABASE_URL": url, "OQRON_PROJECT": PROJECT,
        "OQRON_ENVIRONMENT": ENVIRONMENT, "OQRON_LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "oqronboard.settings", "DJANGO_ALLOWED_HOSTS": "testserver",
    })
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(username="bench-viewer", defaults={"is_superuser": True})
    client = Client(raise_request_exception=True)
    client.force_login(user)
    return client


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=os.environ.get("OQRON_BENCH_DATABASE_URL",
                                                                 "postgresql://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--keep", action="store_true", help="keep the bench database afterwards")
    args = parser.parse_args(argv)
    name = "oqron_bench_trace"
    url = bench_url(args.database_url, name)
    create_database(args.database_url, name)
    try:
        seed(url, runs=args.runs, entries=args.entries)
        client = start_django(url)
        from django.urls import reverse

        from oqronkit.contrib.django.engine import engine_for

        engine = engine_for(PROJECT, ENVIRONMENT)
        count = len(engine.trace(CID).entries)
        assert count == args.entries, f"the trace has {count} entries, not {args.entries}"
        page, api = reverse("oqronboard:trace", args=[CID]), reverse("oqronboard:api-trace", args=[CID])

        def get(path: str) -> Callable[[], object]:
            def call() -> object:
                response = client.get(path)  # type: ignore[attr-defined]
                assert response.status_code == 200, response.status_code
                return response
            return call

        timed: dict[str, Callable[[], object]] = {"engine.trace": lambda: engine.trace(CID), "page": get(page),
                                                  "api": get(api)}
        samples: dict[str, list[float]] = {k: [] for k in timed}
        for fn in timed.values():
            fn()  # warm: connections, templates
        for _ in range(args.repeat):
            for key, fn in timed.items():  # interleaved: the machine's noise hits each alike
                started = time.perf_counter()
                fn()
                samples[key].append((time.perf_counter() - started) * 1000)
        print(f"{'what':<14}{'median ms':>10}{'p95 ms':>9}   ({args.repeat} runs each, {count:,} entries)")
        for key, values in samples.items():
            values.sort()
            p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
            print(f"{key:<14}{statistics.median(values):>10.1f}{p95:>9.1f}")
        ok = statistics.median(samples["page"]) < TARGET_MS
        print(f"{'PASS' if ok else 'FAIL'}: the trace page's median under {TARGET_MS:.0f} ms")
        return 0 if ok else 1
    finally:
        if not args.keep:  # FORCE ends this process's own connections to it
            drop_database(args.database_url, name)

if __name__ == "__main__":
    raise SystemExit(main())

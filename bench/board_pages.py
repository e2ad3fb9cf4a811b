"""Server time of every board page and fragment over 1,000,000 runs, 200,000 jobs and
1,000,000 retained messages in 20 topics.

    .venv/bin/python bench/board_pages.py [--database-url URL] [--reseed] [--repeat 20]
        [--warmup 2] [--only REGEX] [--explain 6] [--messages 1000000] [--topics 20]

1. Seeds the Postgres database (``bench/seed.py``: 1M runs, 200k jobs of which 10 % are
   dead letters, written through the engine's durable plane; ``bench/topic_seed.py``:
   1M messages through the engine's log, three consumer groups per topic), unless a
   fresh seed of the same size is already there; then ``ANALYZE``.
2. Starts Django on that database in ``postgres`` mode (``OQRON_MODE``,
   ``OQRON_DATABASE_URL``, ``OQRON_PROJECT``, ``OQRON_ENVIRONMENT``), runs ``migrate``
   for the auth tables and logs a test ``Client`` in as an operator.
3. Discovers the board's GET URLs from the URLconf (the admin and the login pages
   aside), fills their parameters with seeded ids, adds a few filtered variants, and
   times each one ``--repeat`` times after ``--warmup`` requests; then the same for
   every htmx fragment those pages load or poll (their ``hx-get`` URLs, requested with
   ``HX-Request: true``). POST-only actions (405) are listed and skipped.
4. Prints median and p95 per URL, then PASS/FAIL for the targets: overview, failed
   runs, DLQ depth, run detail and the topics page, each under 150 ms median and 300 ms
   p95, and a topic's log under 100 ms median and 200 ms p95. A target whose page does
   not exist is a FAIL saying so.
5. Prints ``EXPLAIN (ANALYZE, BUFFERS)`` of the slowest queries seen during the timed
   requests, both Django's (``CaptureQueriesContext``) and the engine's own (its
   psycopg connections are wrapped for the run), with the indexes each plan uses.

Exit status 0 when every target passes, 1 otherwise. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import seed  # bench/seed.py, beside this file
import topic_seed  # bench/topic_seed.py

from oqronkit.namespaces import dlq_namespace, job_namespace

TARGET_MEDIAN_MS = 150.0
TARGET_P95_MS = 300.0
SKIPPED_NAMESPACES = {"admin"}
SKIPPED_NAMES = {"login", "logout", "password_change", "password_change_done", "password_reset",
                 "password_reset_done", "password_reset_confirm", "password_reset_complete"}
INDEX_NODE = re.compile(r"(Index Only Scan|Index Scan|Bitmap Index Scan)(?: Backward)? (?:using|on) (\S+)")
SEQ_NODE = re.compile(r"Seq Scan on (\S+)")


# -- what to time --------------------------------------------------------------------


@dataclass
class Endpoint:
    """One URL to time: a page, or (``hx``) the fragment it answers to htmx."""

    label: str
    name: str
    route: str
    url: str
    hx: bool = False
    timings: list[float] = field(default_factory=list)
    status: int = 0
    size: int = 0
    django_sql: list[tuple[str, float]] = field(default_factory=list)
    engine_sql: list[tuple[Any, Any, float]] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.timings) if self.timings else float("nan")

    @property
    def p95(self) -> float:
        if not self.timings:
            return float("nan")
        ordered = sorted(self.timings)
        return ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]


# Target -> the URL names that render it (the page and its htmx fragments, unfiltered).
TARGETS = {
    "overview": ("home",),
    "failed runs": ("failed-runs",),
    "DLQ depth": ("dead-letters",),
    "run detail": ("run", "run-live"),
    "topics page": ("topics",),
    "topic log": ("topic-log",),
}
# (median, p95) budgets in ms where a target's differ from the default.
BUDGETS = {"topic log": (100.0, 200.0)}
# Filtered variants worth timing too: URL name -> query strings ({...} from the seed).
VARIANTS = {
    "runs": ("name={queue}", "module=worker", "status=failed&window=7d", "q=timed out"),
    "failed-runs": ("name={queue}", "q=gateway", "window=7d"),
    "dead-letters": ("queue={queue}", "fingerprint={fingerprint}", "q=declined"),
    "jump": ("id={run}", "id={dead_job}"),
    "dead-export": ("format=csv", "format=json&queue={queue}"),
    "topic-log": ("key={key}", "correlation={correlation}", "window=1h", "before={before}"),
    # The metrics history's other ranges (the pages' defaults: 24h, the overview's 7d).
    "queue-jobs": ("range=30d", "range=1y"),
    "handler": ("range=7d", "range=30d", "range=1y"),
    "home": ("range=24h",),
}


def target_of(endpoint: Endpoint) -> str | None:
    """The target an endpoint counts for: its URL name's, when no user filter is applied."""
    query = endpoint.url.partition("?")[2]
    filtered = [kv for kv in query.split("&") if kv and not kv.startswith("panel=")]
    if filtered:
        return None
    return next((title for title, names in TARGETS.items() if endpoint.name in names), None)


def fill_parameter(param: str, route: str, sample: seed.SeedSummary,
                   topics: topic_seed.TopicSummary | None = None) -> str | None:
    """A seeded value for a URL parameter, chosen by its name (None: unknown)."""
    p, dead = param.lower(), any(w in route.lower() for w in ("dlq", "dead"))
    if p in ("topic", "group", "message_id"):
        return None if topics is None else {"topic": topics.sample_topic, "group": topics.sample_group,
                                            "message_id": topics.sample_message}[p]
    if "fingerprint" in p or "group" in p:
        return sample.sample_fingerprint
    if "run" in p:
        return sample.sample_failed_run
    if "job" in p:
        return sample.sample_dead_job if dead else sample.sample_waiting_job
    if "queue" in p:
        return sample.sample_dead_queue if dead or "job" not in route else sample.sample_waiting_queue
    if p in ("namespace", "ns"):
        return dlq_namespace(sample.sample_dead_queue) if dead else job_namespace(sample.sample_waiting_queue)
    if p in ("name", "definition"):
        return sample.sample_dead_queue
    if p in ("module", "kind", "record_kind"):
        return "queue"
    if p == "project":
        return seed.PROJECT
    if p in ("environment", "env"):
        return seed.ENVIRONMENT
    if p in ("format", "fmt"):
        return "csv"
    return None


def discover(sample: seed.SeedSummary, topics: topic_seed.TopicSummary | None = None
             ) -> tuple[list[Endpoint], list[str]]:
    """Every named GET-able board URL with its parameters filled; and the skipped ones."""
    from django.urls import URLPattern, URLResolver, get_resolver, reverse

    endpoints: list[Endpoint] = []
    skipped: list[str] = []

    def walk(patterns: list[Any], prefix: str, namespace: str | None) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                if entry.namespace in SKIPPED_NAMESPACES or str(entry.pattern).startswith("admin/"):
                    continue
                inner = ":".join(n for n in (namespace, entry.namespace) if n) or None
                walk(entry.url_patterns, prefix + str(entry.pattern), inner)
            elif isinstance(entry, URLPattern) and entry.name and entry.name not in SKIPPED_NAMES:
                add(entry, prefix + str(entry.pattern), f"{namespace}:{entry.name}" if namespace else entry.name)

    def add(entry: Any, route: str, name: str) -> None:
        params = list(getattr(entry.pattern, "converters", {}) or entry.pattern.regex.groupindex)
        values = {p: fill_parameter(p, route, sample, topics) for p in params}
        unknown = [p for p, v in values.items() if v is None]
        if unknown:
            skipped.append(f"{name} ({route}): no seeded value for {', '.join(unknown)}")
            return
        url = reverse(name, kwargs=values)
        endpoints.append(Endpoint(label=url, name=name, route=route, url=url))
        if values.get("run_id") and sample.sample_running_run:
            running = reverse(name, kwargs={**values, "run_id": sample.sample_running_run})
            endpoints.append(Endpoint(label=f"{running} (running)", name=name, route=route, url=running))
        fill = {"queue": sample.sample_dead_queue, "fingerprint": sample.sample_fingerprint,
                "run": sample.sample_failed_run, "dead_job": sample.sample_dead_job}
        if topics is not None:
            fill.update(key=topics.sample_key, correlation=topics.sample_correlation,
                        before=time.strftime("%Y-%m-%dT%H:%M", time.gmtime(time.time() - 86_400)))
        for query in VARIANTS.get(name, ()):
            variant = f"{url}?{query.format(**fill)}"
            endpoints.append(Endpoint(label=variant, name=name, route=route, url=variant))

    walk(get_resolver().url_patterns, "", None)
    return endpoints, skipped


# -- Django on the bench database ------------------------------------------------------


def start_django(url: str) -> None:
    """Point the board at the bench database in postgres mode, set Django up, migrate."""
    os.environ.update({
        "OQRON_MODE": "postgres", "OQRON_DATABASE_URL": url,
        "OQRON_PROJECT": seed.PROJECT, "OQRON_ENVIRONMENT": seed.ENVIRONMENT,
        "OQRON_LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "oqronboard.settings",
        "DJANGO_ALLOWED_HOSTS": "testserver,127.0.0.1,localhost",
    })
    import logging

    import django
    from django.core.management import call_command

    django.setup()
    logging.getLogger("django.request").setLevel(logging.ERROR)  # the 405s of POST-only URLs
    call_command("migrate", verbosity=0)


def operator_client() -> Any:
    """A test client logged in as a member of the board's ``operators`` group (a
    superuser when the board has no such group yet)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(username="bench-operator")
    group = Group.objects.filter(name="operators").first()
    if group is not None:
        user.groups.add(group)
        print("timing as bench-operator, a member of the operators group")
    else:
        user.is_superuser = True
        user.save(update_fields=["is_superuser"])
        print("the board has no operators group: timing as a superuser")
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


# -- capturing the engine's SQL ------------------------------------------------------


class _RecordingConnection:
    """A psycopg connection whose ``execute`` calls are recorded with their duration."""

    def __init__(self, conn: Any, sink: list[tuple[Any, Any, float]]) -> None:
        self._conn = conn
        self._sink = sink

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        started = time.perf_counter()
        cursor = self._conn.execute(query, params, **kwargs)
        self._sink.append((query, params, (time.perf_counter() - started) * 1000))
        return cursor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class EngineSQL:
    """Wraps the ``_connection()`` of the engine's Postgres store and hot plane."""

    def __init__(self) -> None:
        self.sink: list[tuple[Any, Any, float]] = []
        self.targets: list[Any] = []

    def install(self) -> None:
        from oqronkit.contrib.django import engine

        core = engine.get_engine()
        for backend in (core.durable.store, core.hot.plane):
            if hasattr(backend, "_connection"):
                self._wrap(backend)

    def _wrap(self, backend: Any) -> None:
        original = backend._connection
        sink = self.sink

        @contextmanager
        def recording() -> Iterator[Any]:
            with original() as conn:
                yield _RecordingConnection(conn, sink)

        backend._connection = recording
        self.targets.append(backend)

    @contextmanager
    def capture(self) -> Iterator[list[tuple[Any, Any, float]]]:
        start = len(self.sink)
        captured: list[tuple[Any, Any, float]] = []
        try:
            yield captured
        finally:
            captured.extend(self.sink[start:])
            del self.sink[start:]


# -- timing --------------------------------------------------------------------------


def request(client: Any, endpoint: Endpoint) -> tuple[int, int]:
    headers = {"HX-Request": "true"} if endpoint.hx else {}
    response = client.get(endpoint.url, headers=headers)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, len(body)


def time_endpoint(client: Any, endpoint: Endpoint, engine_sql: EngineSQL, *, repeat: int, warmup: int) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(warmup):
        endpoint.status, endpoint.size = request(client, endpoint)
    if endpoint.status not in (200, 286, 302):
        return
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as queries, engine_sql.capture() as engine_queries:
            started = time.perf_counter()
            endpoint.status, endpoint.size = request(client, endpoint)
            endpoint.timings.append((time.perf_counter() - started) * 1000)
        endpoint.django_sql.extend((q["sql"], float(q["time"]) * 1000) for q in queries.captured_queries)
        endpoint.engine_sql.extend(engine_queries)


HX_GET = re.compile(r"""hx-get=["']([^"']+)["']""")


def url_name(url: str, default: str) -> str:
    """The URL name the path of ``url`` resolves to."""
    from django.urls import Resolver404, resolve

    try:
        return resolve(url.partition("?")[0]).view_name
    except Resolver404:
        return default


def add_fragments(client: Any, endpoints: list[Endpoint]) -> list[Endpoint]:
    """The htmx fragments the timed pages load or poll (their ``hx-get`` URLs, requested
    with ``HX-Request: true``), each once."""
    from html import unescape
    from urllib.parse import urljoin

    seen = {e.url for e in endpoints if e.hx}
    fragments = []
    for page in endpoints:
        if page.hx or page.status != 200:
            continue
        response = client.get(page.url)
        if response.streaming or "html" not in response.get("Content-Type", ""):
            continue
        for href in HX_GET.findall(response.content.decode(errors="replace")):
            url = urljoin(page.url, unescape(href))
            if url in seen:
                continue
            seen.add(url)
            fragments.append(Endpoint(label=f"{url} [htmx]", name=url_name(url, page.name), route=page.route,
                                      url=url, hx=True))
    return fragments


# -- reporting -----------------------------------------------------------------------


def print_table(endpoints: list[Endpoint]) -> None:
    width = max([len(e.label) for e in endpoints] + [10])
    print(f"\n| {'URL':<{width}} | {'name':<14} | status | median ms | p95 ms | SQL/req |   bytes |")
    print(f"|{'-' * (width + 2)}|{'-' * 16}|--------|-----------|--------|---------|---------|")
    for e in endpoints:
        if e.timings:
            sql = (len(e.django_sql) + len(e.engine_sql)) / len(e.timings)
            print(f"| {e.label:<{width}} | {e.name:<14} | {e.status:>6} | {e.median:>9.1f} | {e.p95:>6.1f} "
                  f"| {sql:>7.1f} | {e.size:>7} |")
        else:
            print(f"| {e.label:<{width}} | {e.name:<14} | {e.status:>6} | {'-':>9} | {'-':>6} | {'-':>7} | {'-':>7} |")


def check_targets(endpoints: list[Endpoint]) -> bool:
    """PASS/FAIL per target: every unfiltered URL of the target (page and fragments)
    must meet both budgets; a target with no such URL fails."""
    print(f"\nTargets: median < {TARGET_MEDIAN_MS:.0f} ms and p95 < {TARGET_P95_MS:.0f} ms, except "
          + ", ".join(f"{t}: < {m:.0f} / {p:.0f} ms" for t, (m, p) in BUDGETS.items()))
    print("| target      | URL                                                    | median ms | p95 ms | result |")
    print("|-------------|--------------------------------------------------------|-----------|--------|--------|")
    ok = True
    for title, names in TARGETS.items():
        matching = [e for e in endpoints if e.timings and target_of(e) == title]
        if not matching:
            ok = False
            missing = f"(no page named {' or '.join(names)} answered 200)"
            print(f"| {title:<11} | {missing:<54} | {'-':>9} | {'-':>6} | FAIL   |")
            continue
        median_budget, p95_budget = BUDGETS.get(title, (TARGET_MEDIAN_MS, TARGET_P95_MS))
        for e in sorted(matching, key=lambda e: -e.median):
            passed = e.median < median_budget and e.p95 < p95_budget
            ok &= passed
            print(f"| {title:<11} | {e.label[:54]:<54} | {e.median:>9.1f} | {e.p95:>6.1f} "
                  f"| {'PASS' if passed else 'FAIL':<6} |")
    return ok


def _plan_summary(plan: str) -> str:
    indexes = sorted({m.group(2) for m in INDEX_NODE.finditer(plan)})
    seqs = sorted({m.group(1) for m in SEQ_NODE.finditer(plan)})
    parts = []
    if indexes:
        parts.append("uses index " + ", ".join(indexes))
    if seqs:
        big = [s for s in seqs if s.startswith(("oqron_runs", "oqron_jobs"))]
        parts.append(("SEQ SCAN (large table!) on " if big else "seq scan on ") + ", ".join(seqs))
    return "; ".join(parts) or "no table scan (constant / function)"


@dataclass
class Statement:
    """One distinct SQL statement an endpoint ran, with its time per execution."""

    source: str  # "django" (the ORM) or "engine" (oqronkit's own connections)
    text: str
    query: Any
    params: Any
    times: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


_VOLATILE_SQL = re.compile(r"'[^']*'|\b\d+\b|_django_curs_\w+")


def statements(endpoint: Endpoint) -> list[Statement]:
    """The endpoint's distinct statements (literals ignored), slowest first."""
    found: dict[tuple[str, str], Statement] = {}
    for sql_text, ms in endpoint.django_sql:
        key = ("django", _VOLATILE_SQL.sub("?", sql_text))
        found.setdefault(key, Statement("django", sql_text, sql_text, None)).times.append(ms)
    for query, params, ms in endpoint.engine_sql:
        text = query.as_string(None) if hasattr(query, "as_string") else str(query)
        found.setdefault(("engine", text), Statement("engine", text, query, params)).times.append(ms)
    return sorted(found.values(), key=lambda st: -st.median)


def plan_of(statement: Statement, url: str) -> str:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of a statement, on the connection kind that ran it."""
    import psycopg
    from django.db import connection
    from psycopg import sql as psql

    try:
        if statement.source == "django":
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement.query)
                return "\n".join(row[0] for row in cursor.fetchall())
        query = statement.query if hasattr(statement.query, "as_string") else psql.SQL(statement.query)
        with psycopg.connect(url) as conn:
            rows = conn.execute(psql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + query, statement.params).fetchall()
            conn.rollback()  # EXPLAIN ANALYZE executes: never keep what it did
        return "\n".join(row[0] for row in rows)
    except Exception as exc:  # e.g. SET or a statement EXPLAIN does not take
        return f"(not explainable: {exc.__class__.__name__}: {str(exc).splitlines()[0]})"


def print_plan(plan: str) -> None:
    for line in plan.splitlines():
        print(f"       {line}")


def explain(endpoints: list[Endpoint], url: str, limit: int) -> None:
    """Per target page: every statement of a request with the index its plan uses and
    the full plan of the slowest; then the slowest statements of any URL."""
    print("\nEXPLAIN evidence (statements captured during the timed requests; times are medians):")
    for title in TARGETS:
        for endpoint in [e for e in endpoints if e.timings and target_of(e) == title]:
            found = statements(endpoint)
            per_request = sum(len(st.times) for st in found) / len(endpoint.timings)
            print(f"\n== {title}: {endpoint.label}  ({per_request:.1f} statements per request)")
            for i, st in enumerate(found):
                plan = plan_of(st, url)
                times = len(st.times) / len(endpoint.timings)
                print(f"  {st.median:7.1f} ms x{times:<3.0f} {st.source}  {_compact(st.text, 150)}\n"
                      f"             => {_plan_summary(plan)}")
                if i == 0 and st.median >= 1.0:
                    print_plan(plan)
    everything = sorted((st for e in endpoints if e.timings for st in statements(e)), key=lambda st: -st.median)
    top: list[Statement] = []
    seen: set[str] = set()
    for st in everything:
        key = _VOLATILE_SQL.sub("?", st.text)
        if key not in seen and len(top) < limit:
            seen.add(key)
            top.append(st)
    print(f"\n== the {len(top)} slowest statements of any URL")
    for st in top:
        plan = plan_of(st, url)
        print(f"\n--- {st.median:.1f} ms  {st.source}  {_compact(st.text)}\n    => {_plan_summary(plan)}")
        print_plan(plan)


def _compact(sql_text: str, limit: int = 400) -> str:
    one = " ".join(sql_text.split())
    return one if len(one) <= limit else one[:limit] + " ..."


# -- main ----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=seed.DEFAULT_URL)
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--jobs", type=int, default=200_000)
    parser.add_argument("--reseed", action="store_true", help="drop the engine's tables and seed again")
    parser.add_argument("--repeat", type=int, default=20, help="timed requests per URL")
    parser.add_argument("--warmup", type=int, default=2, help="untimed requests per URL first")
    parser.add_argument("--only", default="", help="time only URLs whose name or path matches this regex")
    parser.add_argument("--explain", type=int, default=6, help="how many slow statements to EXPLAIN")
    parser.add_argument("--messages", type=int, default=1_000_000, help="retained messages (0: no topics)")
    parser.add_argument("--topics", type=int, default=20)
    args = parser.parse_args(argv)

    sample = seed.ensure_seeded(args.database_url, seed.SeedPlan(runs=args.runs, jobs=args.jobs), reseed=args.reseed)
    topics = topic_seed.ensure_topics_seeded(args.database_url, topic_seed.TopicPlan(args.messages, args.topics),
                                             reseed=args.reseed) if args.messages else None
    start_django(args.database_url)
    client = operator_client()
    endpoints, skipped = discover(sample, topics)
    if args.only:
        endpoints = [e for e in endpoints if re.search(args.only, f"{e.name} {e.url}")]
    engine_sql = EngineSQL()
    engine_sql.install()
    print(f"\ntiming {len(endpoints)} URLs, {args.repeat} requests each after {args.warmup} warm-up(s)")
    for endpoint in endpoints:
        time_endpoint(client, endpoint, engine_sql, repeat=args.repeat, warmup=args.warmup)
    fragments = add_fragments(client, endpoints)
    for endpoint in fragments:
        time_endpoint(client, endpoint, engine_sql, repeat=args.repeat, warmup=args.warmup)
    timed = sorted(endpoints + fragments, key=lambda e: (e.url, e.hx))
    print_table(timed)
    for line in skipped:
        print(f"  skipped: {line}")
    for e in timed:
        if not e.timings:
            print(f"  not timed: {e.label} answered {e.status}" + (" (POST-only action)" if e.status == 405 else ""))
    passed = check_targets(timed)
    explain(timed, args.database_url, args.explain)
    print(f"\nRESULT: {'all targets PASS' if passed else 'some targets FAIL'}")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())

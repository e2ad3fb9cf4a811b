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
   for the auth tables and logs a test ``Client`` in as an operator; then seeds, once
   per seed, what issue 37's pages show (``bench/page_extras.py``: a correlation id of
   1,000 entries, a bulk operation, a group, a replay set).
3. Discovers the board's GET URLs from the URLconf (the admin and the login pages
   aside), fills their parameters with seeded ids, adds a few filtered variants, and
   times each one ``--repeat`` times after ``--warmup`` requests; then the same for
   every htmx fragment those pages load or poll (their ``hx-get`` URLs, requested with
   ``HX-Request: true``). POST-only actions (405) are listed and skipped. A streamed
   response (the dead-letter export) is timed to its first row, its whole body aside.
4. Prints median and p95 per URL, then PASS/FAIL for the target of issue 37 item 6:
   every page and fragment (filtered variants included) under 50 ms median server
   time; p95 is printed beside it, not judged (a shared 2-core machine's tail is noise).
5. Prints ``EXPLAIN (ANALYZE, BUFFERS)`` of every statement of a URL over the target,
   and of the slowest statements of any URL, both Django's (``CaptureQueriesContext``)
   and the engine's own (its psycopg connections are wrapped for the run), with the
   indexes each plan uses.

Figures several pages share between viewers for ``OQRON_BOARD_CACHE_SECONDS`` (2 s by
default; each page says when it read them) are shared between the timed requests too;
``--cold`` times one viewer, who finds them expired at every request. Either way a child
process does what a cluster's leader does for the board (``bench/leader_duties.py``).
Re-run one page on a noisy minute:
``--only 'dead-export|trace'`` (a regex over the URL name and path). Exit status 0 when
every timed URL passes, 1 otherwise. Not part of the test suite; bench/README.md
("Issue 37 item 6") has the last table.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import seed  # bench/seed.py, beside this file
import topic_seed  # bench/topic_seed.py
from leader_duties import LeaderDuties, forget_shared  # bench/leader_duties.py
from page_extras import Extras, ensure_extras  # bench/page_extras.py
from page_report import Endpoint, check_targets, explain, print_table
from top_up import top_up  # bench/top_up.py

from oqronkit.namespaces import dlq_namespace, job_namespace

SKIPPED_NAMESPACES = {"admin"}
SKIPPED_NAMES = {"login", "logout", "password_change", "password_change_done", "password_reset",
                 "password_reset_done", "password_reset_confirm", "password_reset_complete"}


# -- what to time --------------------------------------------------------------------


# Filtered variants worth timing too: URL name -> query strings ({...} from the seed).
VARIANTS = {
    "runs": ("name={queue}", "module=worker", "status=failed&window=7d", "q=timed out"),
    "failed-runs": ("name={queue}", "q=gateway", "window=7d"),
    # panel=groups without htmx: the groups' own page, the dead-letter page's link without script.
    "dead-letters": ("queue={queue}", "fingerprint={fingerprint}", "q=declined", "panel=groups"),
    "jump": ("id={run}", "id={dead_job}", "id={trace}"),
    "dead-export": ("format=csv", "format=json&queue={queue}"),
    "topic-log": ("key={key}", "correlation={correlation}", "window=1h", "before={before}"),
    # The metrics history's other ranges (the pages' defaults: 24h, the overview's 7d).
    "queue-jobs": ("range=30d", "range=1y"),
    "handler": ("range=7d", "range=30d", "range=1y"),
    "home": ("range=24h",),
    "limits": ("limiter={limiter}&key=user-1",),
}


def fill_parameter(param: str, route: str, sample: seed.SeedSummary,
                   topics: topic_seed.TopicSummary | None = None, extras: Extras | None = None) -> str | None:
    """A seeded value for a URL parameter, chosen by its name (None: unknown)."""
    p, dead = param.lower(), any(w in route.lower() for w in ("dlq", "dead"))
    if p in ("correlation_id", "op_id", "group_id", "set_id", "webhook", "endpoint", "delivery_id"):
        return None if extras is None else getattr(extras, p)
    if p == "id" and "schedules/" in route:  # schedules/cron/<id>/ and schedules/schedule/<id>/
        return None if extras is None else (extras.cron if "/cron/" in route else extras.schedule)
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


def discover(sample: seed.SeedSummary, topics: topic_seed.TopicSummary | None = None,
             extras: Extras | None = None) -> tuple[list[Endpoint], list[str]]:
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
        values = {p: fill_parameter(p, route, sample, topics, extras) for p in params}
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
                "run": sample.sample_failed_run, "dead_job": sample.sample_dead_job,
                "trace": extras.correlation_id if extras else "", "limiter": extras.limiter if extras else ""}
        if topics is not None:
            fill.update(key=topics.sample_key, correlation=topics.sample_correlation,
                        before=time.strftime("%Y-%m-%dT%H:%M", time.gmtime(time.time() - 86_400)))
        for query in VARIANTS.get(name.rpartition(":")[2], ()):
            variant = f"{url}?{query.format(**fill)}"
            endpoints.append(Endpoint(label=variant, name=name, route=route, url=variant))

    walk(get_resolver().url_patterns, "", None)
    return endpoints, skipped


# -- Django on the bench database ------------------------------------------------------


def start_django(url: str) -> None:
    """Point the board at the bench database in postgres mode, set Django up as deployed
    (``DEBUG`` off: no debug cursors or template debug data), migrate."""
    os.environ.update({
        "OQRON_MODE": "postgres", "OQRON_DATABASE_URL": url,
        "OQRON_PROJECT": seed.PROJECT, "OQRON_ENVIRONMENT": seed.ENVIRONMENT,
        "OQRON_LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "oqronboard.settings",
        "DJANGO_ALLOWED_HOSTS": "testserver,127.0.0.1,localhost",
        "DJANGO_DEBUG": "0", "DJANGO_PLAIN_HTTP": "1",  # the test client speaks plain HTTP
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50),
    })
    import logging

    import django
    from django.core.management import call_command

    django.setup()
    logging.getLogger("django.request").setLevel(logging.ERROR)  # the 405s of POST-only URLs
    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # the manifest a deployed board serves from


def operator_client() -> Any:
    """A test client logged in as a member of the board's ``operators`` group, allowed to
    act in production (the bench's environment: its forms answer 403 otherwise); a
    superuser when the board has no such group yet."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group, Permission
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(username="bench-operator")
    group = Group.objects.filter(name="operators").first()
    if group is not None:
        user.groups.add(group)
        user.user_permissions.add(Permission.objects.get(codename="operate_production",
                                                         content_type__app_label="oqronboard"))
        print("timing as bench-operator, a member of the operators group who may act in production")
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
            with original() as conn:  # the timed requests' statements, not a background thread's
                main = threading.current_thread() is threading.main_thread()
                yield _RecordingConnection(conn, sink) if main else conn

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


def request(client: Any, endpoint: Endpoint) -> tuple[float, float]:
    """One GET: (ms to the answer, ms to the whole body). For a streamed response the
    first figure is the time to its first row: its second chunk (the first is the CSV
    header or JSON's ``[``)."""
    headers = {"HX-Request": "true"} if endpoint.hx else {}
    started = time.perf_counter()
    response = client.get(endpoint.url, headers=headers)
    endpoint.status, endpoint.streaming = response.status_code, response.streaming
    if not response.streaming:
        endpoint.size = len(response.content)
        elapsed = (time.perf_counter() - started) * 1000
        return elapsed, elapsed
    first_row, size = 0.0, 0
    for index, chunk in enumerate(response.streaming_content):
        size += len(chunk)
        if index <= 1:
            first_row = (time.perf_counter() - started) * 1000
    response.close()
    endpoint.size = size
    return first_row, (time.perf_counter() - started) * 1000


def time_endpoint(client: Any, endpoint: Endpoint, engine_sql: EngineSQL, *, repeat: int, warmup: int,
                  cold: bool = False) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(warmup):
        request(client, endpoint)
    if endpoint.status not in (200, 286, 302):
        return
    for _ in range(repeat):
        if cold:
            forget_shared()
        with CaptureQueriesContext(connection) as queries, engine_sql.capture() as engine_queries:
            answered, whole = request(client, endpoint)
        endpoint.timings.append(answered)
        endpoint.totals.append(whole)
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


def watched(client: Any) -> None:
    """The viewer the bench models has been polling before the first timed request: one
    overview poll asks the leader to keep the queue depths, and its first pass (within a
    second) has counted them. Without it the first URL's first requests count the depths
    themselves, as the first view of a board nobody watched for 30 s does (~25 ms more at
    180,000 hot rows; the p95 column shows it when it happens)."""
    from django.urls import reverse

    from oqronkit.services.kept_depths import KEEP_EVERY_S

    client.get(reverse("oqronboard:home"))
    time.sleep(2 * KEEP_EVERY_S)


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
    parser.add_argument("--cold", action="store_true",
                        help="one viewer: what viewers share has expired before every request (leader_duties.py)")
    args = parser.parse_args(argv)

    plan, topic_plan = seed.SeedPlan(runs=args.runs, jobs=args.jobs), topic_seed.TopicPlan(args.messages, args.topics)
    sample = seed.ensure_seeded(args.database_url, plan, reseed=args.reseed)
    topics = (topic_seed.ensure_topics_seeded(args.database_url, topic_plan, reseed=args.reseed)
              if args.messages else None)
    top_up(args.database_url, plan, sample, topic_plan if args.messages else None)  # the last hour as busy as any
    start_django(args.database_url)
    client = operator_client()
    from oqronkit.contrib.django.engine import engine_for

    extras = ensure_extras(args.database_url, engine_for(seed.PROJECT, seed.ENVIRONMENT), sample)
    duties = LeaderDuties(args.database_url, seed.PROJECT, seed.ENVIRONMENT).start()
    watched(client)
    endpoints, skipped = discover(sample, topics, extras)
    if args.only:
        endpoints = [e for e in endpoints if re.search(args.only, f"{e.name} {e.url}")]
    engine_sql = EngineSQL()
    engine_sql.install()
    print(f"\ntiming {len(endpoints)} URLs, {args.repeat} requests each after {args.warmup} warm-up(s)")
    for endpoint in endpoints:
        time_endpoint(client, endpoint, engine_sql, repeat=args.repeat, warmup=args.warmup, cold=args.cold)
    fragments = add_fragments(client, endpoints)
    for endpoint in fragments:
        time_endpoint(client, endpoint, engine_sql, repeat=args.repeat, warmup=args.warmup, cold=args.cold)
    duties.stop()
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

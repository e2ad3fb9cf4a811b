"""The page bench's report (bench/board_pages.py): the table of every URL, the verdict
against the target, and the EXPLAIN evidence of the statements the URLs ran."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any

#: Issue 37 item 6: every page and fragment, median server time.
TARGET_MEDIAN_MS = 50.0
#: URLs that are no page and keep a target of their own: URL name -> (median ms, whose).
OWN_TARGETS = {"oqronboard:metrics": (200.0, "the Prometheus scrape: issue 23's target, bench/metrics_scrape.py")}
INDEX_NODE = re.compile(r"(Index Only Scan|Index Scan|Bitmap Index Scan)(?: Backward)? (?:using|on) (\S+)")
SEQ_NODE = re.compile(r"Seq Scan on (\S+)")


@dataclass
class Endpoint:
    """One URL to time: a page, or (``hx``) the fragment it answers to htmx. A streamed
    response (the export) is timed to its first row; ``totals`` holds the whole body's."""

    label: str
    name: str
    route: str
    url: str
    hx: bool = False
    timings: list[float] = field(default_factory=list)
    totals: list[float] = field(default_factory=list)
    streaming: bool = False
    status: int = 0
    size: int = 0
    django_sql: list[tuple[str, float]] = field(default_factory=list)
    engine_sql: list[tuple[Any, Any, float]] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.timings) if self.timings else float("nan")

    @property
    def budget(self) -> float:
        return OWN_TARGETS.get(self.name, (TARGET_MEDIAN_MS, ""))[0]

    @property
    def p95(self) -> float:
        return percentile(self.timings, 0.95)


def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def print_table(endpoints: list[Endpoint]) -> None:
    """Every URL: median and p95 (a streamed body's first row; its whole body after)."""
    width = max([len(e.label) for e in endpoints] + [10])
    print(f"\n| {'URL':<{width}} | {'name':<16} | status | median ms | p95 ms | SQL/req |   bytes | verdict |")
    print(f"|{'-' * (width + 2)}|{'-' * 18}|--------|-----------|--------|---------|---------|---------|")
    for e in endpoints:
        if e.timings:
            sql = (len(e.django_sql) + len(e.engine_sql)) / len(e.timings)
            verdict = "ok" if e.median < e.budget else "SLOW"
            print(f"| {e.label:<{width}} | {e.name[-16:]:<16} | {e.status:>6} | {e.median:>9.1f} | {e.p95:>6.1f} "
                  f"| {sql:>7.1f} | {e.size:>7} | {verdict:<7} |")
        else:
            print(f"| {e.label:<{width}} | {e.name[-16:]:<16} | {e.status:>6} | {'-':>9} | {'-':>6} | {'-':>7} "
                  f"| {'-':>7} | {'-':<7} |")
    for e in endpoints:
        if e.streaming and e.totals:
            print(f"  streamed: {e.label} first row {e.median:.1f} ms median, whole body "
                  f"{statistics.median(e.totals):.1f} ms median ({e.size:,} bytes)")


def check_targets(endpoints: list[Endpoint]) -> bool:
    """PASS when every timed URL's median is under the target (p95 is reported, not a target)."""
    timed = [e for e in endpoints if e.timings]
    slow = sorted((e for e in timed if e.median >= e.budget), key=lambda e: -e.median)
    print(f"\nTarget: every page and fragment's median server time < {TARGET_MEDIAN_MS:.0f} ms "
          "(a streamed export: to its first row); p95 is reported, not a target")
    for name, (budget, whose) in OWN_TARGETS.items():
        print(f"  except {name}, {whose}: < {budget:.0f} ms")
    print(f"{len(timed) - len(slow)} of {len(timed)} timed URLs pass")
    for e in slow:
        print(f"  FAIL {e.label}: median {e.median:.1f} ms, p95 {e.p95:.1f} ms")
    return bool(timed) and not slow
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
    """Per URL over the target: every statement of a request with the index its plan
    uses and the full plan of the slowest; then the slowest statements of any URL."""
    print("\nEXPLAIN evidence (statements captured during the timed requests; times are medians):")
    for endpoint in [e for e in endpoints if e.timings and e.median >= e.budget]:
        found = statements(endpoint)
        per_request = sum(len(st.times) for st in found) / len(endpoint.timings)
        print(f"\n== over the target: {endpoint.label}  ({endpoint.median:.1f} ms, "
              f"{per_request:.1f} statements per request)")
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



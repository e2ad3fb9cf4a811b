"""Planner statistics and dead rows of our tables, kept in check where autovacuum lags.

Autovacuum analyzes a table once about 10% of it changed and vacuums it once about 20%
of it is dead; a job queue can outrun both (a bulk enqueue into a fresh or large table,
a new queue whose namespace the statistics have never seen), and some servers run with
autovacuum off altogether (the CI server here does). Without statistics, the planner
estimates the rows of one (project, environment, namespace) at about one, and then
answers the primary-key lookups of a batch (``id = ANY(...)``) by walking the queue's
rows through another index that starts with the same columns: once per batch, so the
cost grows with the backlog. Measured here on a 20,000-job backlog: 2,800 instead of
4,300-4,800 jobs/s, the machine spending 1.7x the CPU per job. On the Postgres hot
plane, rows claimed and released pile up dead behind the ready index the claims walk.

So the leader reads the counters PostgreSQL keeps (``pg_stat_user_tables``) about once a
minute and runs ``ANALYZE`` or ``VACUUM`` on the tables that need it, at most once a
minute per table whichever process asks, skipping a table another session is busy with.
With a healthy autovacuum the thresholds below are rarely reached and nothing runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

#: Rows changed since the last ANALYZE that call for a new one (ANALYZE samples at
#: most 30,000 rows whatever the table's size, so it stays cheap on big tables).
ANALYZE_AFTER_CHANGES = 1_000
#: Dead rows that call for a VACUUM, when they also outnumber the live ones.
VACUUM_AFTER_DEAD = 10_000
#: Rows inserted since the last VACUUM that call for one, when they are also this share
#: of the live rows (autovacuum's insert rule): it marks their pages all-visible, so the
#: board's counts over an index (dead letters per queue) skip the table's rows.
VACUUM_AFTER_INSERTS = 10_000
INSERTED_SHARE = 0.2
#: Seconds between two runs of the same command on a table (autovacuum's count too).
MIN_INTERVAL_S = 60

_HEALTH = b"""
SELECT t.name, s.n_live_tup, s.n_dead_tup, s.n_mod_since_analyze,
       extract(epoch FROM now() - greatest(s.last_analyze, s.last_autoanalyze)),
       extract(epoch FROM now() - greatest(s.last_vacuum, s.last_autovacuum)), s.n_ins_since_vacuum
FROM unnest(%(names)s::text[]) AS t(name)
JOIN pg_stat_user_tables AS s ON s.relid = to_regclass(t.name)
"""


def table_upkeep(conn: psycopg.Connection[Any], tables: Sequence[str], *, after_inserts: bool = False) -> list[str]:
    """ANALYZE / VACUUM those of ``tables`` that need it, on an autocommit connection
    (VACUUM cannot run in a transaction); returns what was done, e.g. ``["analyze oqron_jobs"]``.
    ``after_inserts``: the insert rule too (the durable tables; a hot row never stays long
    enough for its page to matter)."""
    done: list[str] = []
    for name, live, dead, changed, analyzed_ago, vacuumed_ago, inserted in conn.execute(
            _HEALTH, {"names": list(tables)}):
        if changed >= ANALYZE_AFTER_CHANGES and _due(analyzed_ago):
            conn.execute(sql.SQL("ANALYZE (SKIP_LOCKED) {}").format(sql.Identifier(name)))
            done.append(f"analyze {name}")
        dead_rule = dead >= VACUUM_AFTER_DEAD and dead >= live
        insert_rule = after_inserts and inserted >= VACUUM_AFTER_INSERTS and inserted >= live * INSERTED_SHARE
        if (dead_rule or insert_rule) and _due(vacuumed_ago):
            conn.execute(sql.SQL("VACUUM (SKIP_LOCKED) {}").format(sql.Identifier(name)))
            done.append(f"vacuum {name}")
    return done


#: A transaction open this long holds back enough dead rows to matter (at 400 jobs/s,
#: 2,000 jobs' worth in each queue table).
HELD_AFTER_S = 5.0
#: Dead rows that make a table worth a VACUUM once the horizon has moved on.
VACUUM_AFTER_HOLD_DEAD = 1_000

_OLDEST_S = b"""
SELECT coalesce(max(extract(epoch FROM now() - coalesce(xact_start, backend_start))), 0)::float8
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()
  AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)
"""


class HorizonWatch:
    """VACUUMs the tables as soon as a transaction that held the xmin horizon is gone.

    While it was open no dead row could go, and the claims and settles walked them all;
    autovacuum comes back up to a minute later (its naptime, then the table's turn), and
    one that ran meanwhile removed nothing yet counts as done, so table_upkeep's
    once-a-minute rule would wait too. Called every second or so by the leader."""

    def __init__(self) -> None:
        self.held = False

    def step(self, conn: psycopg.Connection[Any], tables: Sequence[str]) -> list[str]:
        """On an autocommit connection; returns what was done."""
        row = conn.execute(_OLDEST_S).fetchone()
        if row is not None and float(row[0]) >= HELD_AFTER_S:
            self.held = True
            return []
        if not self.held:
            return []
        self.held = False
        done: list[str] = []
        for name, _live, dead, *_ in conn.execute(_HEALTH, {"names": list(tables)}).fetchall():
            if dead >= VACUUM_AFTER_HOLD_DEAD:
                conn.execute(sql.SQL("VACUUM (SKIP_LOCKED) {}").format(sql.Identifier(name)))
                done.append(f"vacuum {name} (horizon released)")
        return done


def _due(seconds_ago: Any) -> bool:
    return seconds_ago is None or float(seconds_ago) >= MIN_INTERVAL_S

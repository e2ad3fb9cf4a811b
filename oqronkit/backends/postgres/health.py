"""DatabaseHealth (backends/db_health.py) read from pg_stat_activity and pg_stat_user_tables.

The oldest holder is the session of this database (vacuum's horizon for its tables
counts no other), other than ours, whose snapshot (backend_xmin) or transaction id
(backend_xid) is oldest: an idle-in-transaction session, a long report, a forgotten
BEGIN. Replication slots and prepared transactions can hold the horizon too; they are
rarer and not shown. Without pg_read_all_stats a role sees other roles' sessions
without their client address.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from ..db_health import DatabaseHealth, HorizonHolder, TableHealth

_HOLDER = b"""
SELECT pid, coalesce(application_name, ''), host(client_addr), state,
       extract(epoch FROM now() - coalesce(xact_start, backend_start))::float8,
       greatest(age(backend_xmin), age(backend_xid))
FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND datname = current_database()
  AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)
ORDER BY greatest(age(backend_xmin), age(backend_xid)) DESC, xact_start
LIMIT 1
"""

_TABLES = b"""
SELECT t.name, s.n_live_tup, s.n_dead_tup,
       (extract(epoch FROM greatest(s.last_vacuum, s.last_autovacuum)) * 1000)::bigint,
       (extract(epoch FROM s.last_autovacuum) * 1000)::bigint
FROM unnest(%(names)s::text[]) WITH ORDINALITY AS t(name, i)
JOIN pg_stat_user_tables AS s ON s.relid = to_regclass(t.name)
ORDER BY t.i
"""


def read_health(conn: psycopg.Connection[Any], tables: Sequence[str], warning_s: float) -> DatabaseHealth:
    row = conn.execute(_HOLDER).fetchone()
    holder = None if row is None else HorizonHolder(
        pid=int(row[0]), application_name=str(row[1]), client_addr=row[2], state=row[3], age_s=float(row[4] or 0),
        xmin_age=int(row[5] or 0))
    found = [TableHealth(name, int(live), int(dead), vacuumed, autovacuumed)
             for name, live, dead, vacuumed, autovacuumed in conn.execute(_TABLES, {"names": list(tables)})]
    return DatabaseHealth(holder, found, warning_s)

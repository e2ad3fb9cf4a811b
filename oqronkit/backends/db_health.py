"""What a SQL server says about the engine's tables: the transaction holding back the
xmin horizon (so no dead row anywhere can be removed), and each table's dead rows and
last vacuum. Operators read it on the board's overview and in /metrics to see why a
Postgres-backed queue slowed (issue 38); only PostgreSQL answers it."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Dead rows that call for attention when they also outnumber the live ones (the leader's
#: own upkeep vacuums a table past the same mark: backends/postgres/upkeep.py).
DEAD_ROWS_WARNING = 10_000


@dataclass(frozen=True)
class HorizonHolder:
    """The session whose transaction is the oldest one holding the horizon."""

    pid: int
    application_name: str
    client_addr: str | None  # None: a local socket, or a session of a role this one may not see
    state: str | None  # "idle in transaction", "active", ...
    age_s: float  # since its transaction began
    xmin_age: int  # transactions since its snapshot's xmin


@dataclass(frozen=True)
class TableHealth:
    name: str
    live_rows: int
    dead_rows: int
    last_vacuum_ms: int | None  # the latest of VACUUM and autovacuum, epoch ms
    last_autovacuum_ms: int | None

    @property
    def bloated(self) -> bool:
        return self.dead_rows >= DEAD_ROWS_WARNING and self.dead_rows >= self.live_rows


@dataclass(frozen=True)
class DatabaseHealth:
    holder: HorizonHolder | None
    tables: list[TableHealth] = field(default_factory=list)
    warning_s: float = 30.0

    @property
    def horizon_warning(self) -> bool:
        return self.holder is not None and self.holder.age_s >= self.warning_s

    @property
    def bloated_tables(self) -> list[str]:
        return [t.name for t in self.tables if t.bloated]

    @property
    def warning(self) -> bool:
        return self.horizon_warning or bool(self.bloated_tables)

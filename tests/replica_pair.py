"""A throwaway PostgreSQL primary and a streaming replica of it, for the board's
read-replica tests.

The shared server on 5432 allows no replication connections (and serves every other
test), so the pair is our own: ``initdb`` on a free port (its pg_hba trusts local
replication), then ``pg_basebackup -R -X stream`` into a second directory started on
another port as a hot standby. Both are stopped and removed afterwards.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.dedicated import DedicatedPostgres, dedicated_postgres, free_port


@dataclass
class ReplicaPair:
    primary: DedicatedPostgres
    replica: DedicatedPostgres

    def _one(self, server: DedicatedPostgres, sql: str) -> object:
        import psycopg

        with psycopg.connect(server.url, autocommit=True, connect_timeout=5) as conn:
            row = conn.execute(sql).fetchone()
        return row[0] if row else None

    def caught_up(self) -> bool:
        position = self._one(self.primary, "SELECT pg_current_wal_lsn()::text")
        behind = self._one(self.replica, f"SELECT pg_wal_lsn_diff('{position}'::pg_lsn, pg_last_wal_replay_lsn())")
        return behind is not None and float(str(behind)) <= 0

    def wait_caught_up(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.caught_up():
            if time.monotonic() > deadline:
                raise TimeoutError("the replica did not catch up with the primary")
            time.sleep(0.05)

    def pause_replay(self) -> None:
        self._one(self.replica, "SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        self._one(self.replica, "SELECT pg_wal_replay_resume()")


@contextlib.contextmanager
def replica_pair() -> Iterator[ReplicaPair]:
    """A primary and its hot standby, both running; skips (fails under CI) without the binaries."""
    with dedicated_postgres() as primary:
        datadir = Path(tempfile.mkdtemp(prefix="oqron-pg-replica-"))
        shutil.chown(datadir, "postgres", "postgres")
        subprocess.run(
            ["runuser", "-u", "postgres", "--", str(primary.bindir / "pg_basebackup"), "-h", "127.0.0.1",
             "-p", str(primary.port), "-U", "postgres", "-D", str(datadir), "-R", "-X", "stream", "--no-sync"],
            check=True, capture_output=True, stdin=subprocess.DEVNULL,
        )
        # The copied log belongs to the primary; the standby writes its own.
        (datadir / "server.log").unlink(missing_ok=True)
        replica = DedicatedPostgres(free_port(), datadir, primary.bindir)
        replica.start()
        pair = ReplicaPair(primary, replica)
        try:
            pair.wait_caught_up()
            yield pair
        finally:
            with contextlib.suppress(subprocess.CalledProcessError):
                replica.stop()
            shutil.rmtree(datadir, ignore_errors=True)

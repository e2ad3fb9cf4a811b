"""Dedicated, throwaway Postgres and Redis servers for fault tests.

Fault tests stop, restart or FLUSHALL their servers; the shared ones on the standard
ports serve every other test (and other people), so these tests start their own on a
free port in a temporary directory and tear them down afterwards.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.services import in_ci

PG_BIN = Path("/usr/lib/postgresql")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _missing(what: str) -> None:
    if in_ci():
        pytest.fail(f"{what} is needed for this fault test and is missing (CI=true)")
    pytest.skip(f"{what} is not available")


def wait_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on port {port}")


@dataclass
class DedicatedRedis:
    port: int
    workdir: Path

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        subprocess.run(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "yes", "--dir", str(self.workdir), "--pidfile", str(self.workdir / "redis.pid"),
             "--logfile", str(self.workdir / "redis.log")],
            check=True, capture_output=True,
        )
        wait_port(self.port)

    def stop(self) -> None:
        subprocess.run(["redis-cli", "-p", str(self.port), "shutdown", "nosave"], capture_output=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
            except OSError:
                return
            time.sleep(0.05)

    def flushall(self) -> None:
        subprocess.run(["redis-cli", "-p", str(self.port), "flushall"], check=True, capture_output=True)


@contextlib.contextmanager
def dedicated_redis(kind: type[DedicatedRedis] = DedicatedRedis) -> Iterator[DedicatedRedis]:
    """A throwaway Redis of ``kind`` (a subclass may change how it starts), stopped and removed after."""
    if shutil.which("redis-server") is None:
        _missing("redis-server")
    server = kind(free_port(), Path(tempfile.mkdtemp(prefix="oqron-redis-")))
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.workdir, ignore_errors=True)


@dataclass
class DedicatedPostgres:
    port: int
    datadir: Path
    bindir: Path

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _pg_ctl(self, *args: str) -> None:
        # The server's output goes to a log file: inheriting our pipes would keep them open.
        subprocess.run(
            ["runuser", "-u", "postgres", "--", str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-w",
             "-l", str(self.datadir / "server.log"), *args],
            check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )

    def start(self) -> None:
        self._pg_ctl("-o", f"-p {self.port} -k {self.datadir} -c listen_addresses=127.0.0.1 -c fsync=off", "start")

    def stop(self) -> None:
        self._pg_ctl("-m", "fast", "stop")


@contextlib.contextmanager
def dedicated_postgres() -> Iterator[DedicatedPostgres]:
    versions = sorted(PG_BIN.glob("*/bin/initdb")) if PG_BIN.exists() else []
    if not versions or os.geteuid() != 0:
        _missing("a PostgreSQL server binary (and root, to run it as the postgres user)")
    bindir = versions[-1].parent
    datadir = Path(tempfile.mkdtemp(prefix="oqron-pg-"))
    shutil.chown(datadir, "postgres", "postgres")
    subprocess.run(["runuser", "-u", "postgres", "--", str(bindir / "initdb"), "-D", str(datadir), "-A", "trust",
                    "-U", "postgres", "--no-sync"], check=True, capture_output=True)
    server = DedicatedPostgres(free_port(), datadir, bindir)
    server.start()
    try:
        yield server
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            server.stop()
        shutil.rmtree(datadir, ignore_errors=True)

"""A throwaway local Redis Cluster for tests: 3 masters with a replica each on free
loopback ports, in a temporary directory, torn down afterwards.

Started with ``redis-server --cluster-enabled yes`` x6 and ``redis-cli --cluster create
--cluster-replicas 1``, as an operator would. ``cluster-node-timeout`` is short (2 s) so a
killed master's replica is promoted by the cluster itself within a few seconds.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.dedicated import wait_port
from tests.services import in_ci

NODE_TIMEOUT_MS = 2000


def cluster_port() -> int:
    """A free port P with P + 10000 (the cluster bus) free too; P <= 55535 for that."""
    while True:
        port = random.randint(20000, 45000)
        if all(_free(p) for p in (port, port + 10000)):
            return port


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@dataclass
class LocalCluster:
    workdir: Path
    ports: list[int] = field(default_factory=list)
    killed: set[int] = field(default_factory=set)

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in self.ports[:3])

    def start(self, nodes: int = 6) -> None:
        self.ports = [cluster_port() for _ in range(nodes)]
        for port in self.ports:
            node_dir = self.workdir / str(port)
            node_dir.mkdir()
            subprocess.run(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                 "--cluster-config-file", str(node_dir / "nodes.conf"), "--cluster-node-timeout",
                 str(NODE_TIMEOUT_MS), "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0",
                 "--daemonize", "yes", "--dir", str(node_dir),
                 "--pidfile", str(node_dir / "redis.pid"), "--logfile", str(node_dir / "redis.log")],
                check=True, capture_output=True,
            )
        for port in self.ports:
            wait_port(port)
        subprocess.run(
            ["redis-cli", "--cluster", "create", *(f"127.0.0.1:{p}" for p in self.ports),
             "--cluster-replicas", "1", "--cluster-yes"],
            check=True, capture_output=True, timeout=60,
        )
        self.wait_healthy()

    def cli(self, port: int, *args: str) -> str:
        return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True,
                              timeout=10).stdout

    def wait_healthy(self, timeout: float = 30.0) -> None:
        """Every live node says the cluster is ok and every slot is served."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            alive = self.alive()
            infos = [self.cli(p, "cluster", "info") for p in alive]
            if (infos and all("cluster_state:ok" in i and "cluster_slots_ok:16384" in i for i in infos)
                    and len(self.masters()) == len(self.ports) // 2 and self._replicas_in_sync(alive)):
                return
            time.sleep(0.1)
        raise TimeoutError("the local Redis Cluster did not become healthy")

    def _replicas_in_sync(self, alive: list[int]) -> bool:
        """Every live replica whose master lives has finished its sync: a replica still
        in its first sync cannot be promoted."""
        for port in alive:
            info = self.cli(port, "info", "replication")
            if "role:slave" not in info:
                continue
            master = int(info.split("master_port:")[1].split()[0])
            if master not in self.killed and "master_link_status:up" not in info:
                return False
        return True

    def alive(self) -> list[int]:
        return [p for p in self.ports if p not in self.killed]

    def masters(self) -> list[int]:
        """The ports of the masters not marked failed (as a live node sees them)."""
        out = self.cli(self.alive()[0], "cluster", "nodes")
        return [int(line.split()[1].split(":")[1].split("@")[0]) for line in out.splitlines()
                if "master" in line.split()[2] and "fail" not in line.split()[2]]

    def master_of(self, key: str) -> int:
        slot = int(self.cli(self.alive()[0], "cluster", "keyslot", key).strip())
        for line in self.cli(self.alive()[0], "cluster", "nodes").splitlines():
            parts = line.split()
            if "master" not in parts[2] or "fail" in parts[2]:
                continue
            for span in parts[8:]:
                low, _, high = span.partition("-")
                if low.isdigit() and int(low) <= slot <= int(high or low):
                    return int(parts[1].split(":")[1].split("@")[0])
        raise LookupError(f"no live master serves slot {slot}")

    def replica_of(self, master: int) -> int:
        """The port of a live replica of the master on ``master``."""
        nodes = self.cli(self.alive()[0], "cluster", "nodes").splitlines()
        master_id = next(line.split()[0] for line in nodes if f":{master}@" in line)
        return next(int(line.split()[1].split(":")[1].split("@")[0]) for line in nodes
                    if line.split()[3] == master_id and "fail" not in line.split()[2])

    def pid(self, port: int) -> int | None:
        pidfile = self.workdir / str(port) / "redis.pid"
        try:
            pid = int(pidfile.read_text().strip())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return None
        return pid

    def kill(self, port: int) -> None:
        """SIGKILL one node: no shutdown, no last words to its replica."""
        pid = self.pid(port)
        self.killed.add(port)
        if pid is not None:
            os.kill(pid, signal.SIGKILL)

    def take_over(self, replica: int, timeout: float = 30.0) -> None:
        """``CLUSTER FAILOVER TAKEOVER`` on ``replica``: it becomes master at once, without
        its master's agreement (which a dead master cannot give) or the cluster's vote."""
        self.cli(replica, "cluster", "failover", "takeover")
        deadline = time.monotonic() + timeout
        while "role:master" not in self.cli(replica, "info", "replication"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the replica on port {replica} did not take over")
            time.sleep(0.05)

    def wait_failover(self, port: int, timeout: float = 60.0) -> None:
        """Until every live node marks ``port`` failed and serves every slot without it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            views = [self.cli(p, "cluster", "nodes") for p in self.alive()]
            if all(any(f":{port}@" in line and "fail" in line.split()[2] and "fail?" not in line.split()[2]
                       for line in view.splitlines()) for view in views):
                self.wait_healthy(max(deadline - time.monotonic(), 1.0))
                return
            time.sleep(0.05)
        raise TimeoutError(f"no replica took over from the node on port {port}")

    def stop(self) -> None:
        for port in self.ports:
            pid = self.pid(port)
            if pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


def drop_cluster_project(cluster: LocalCluster, project: str) -> None:
    """Delete one test project's keys from every master (the session's cluster is shared)."""
    import redis

    pattern = "oqron:" + "".join(f"[{c}]" if c in "*?[]\\" else c for c in project) + ":*"
    for port in cluster.masters():
        client = redis.Redis(host="127.0.0.1", port=port)
        try:
            for key in list(client.scan_iter(match=pattern, count=1000)):
                client.delete(key)
        finally:
            client.close()


@contextlib.contextmanager
def local_cluster() -> Iterator[LocalCluster]:
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        message = "redis-server and redis-cli are needed to start a local Redis Cluster"
        if in_ci():
            pytest.fail(f"{message} (CI=true)")
        pytest.skip(message)
    workdir = Path(tempfile.mkdtemp(prefix="oqron-cluster-"))
    cluster = LocalCluster(workdir)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)

"""Classic vs sharded pub/sub on a local Redis Cluster: what a wake-up costs the cluster.

    .venv/bin/python bench/cluster_pubsub.py [--n 20000] [--batch 200] [--repeat 5] [--nodes 6]

Starts a throwaway cluster (``tests/redis_cluster.py``: ``--nodes`` / 2 masters with a
replica each, on loopback ports), one subscriber on the channel's master (SUBSCRIBE, or SSUBSCRIBE for
the sharded rows), then per repetition, the systems interleaved in a shuffled order:

* ``PUBLISH`` / ``SPUBLISH``: N plain commands, pipelined ``--batch`` at a time, to the
  channel's master;
* ``EVALSHA+PUBLISH`` / ``EVALSHA+SPUBLISH``: N calls of a script that INCRs a key and
  publishes on a channel carrying the key's hash tag (the shape of the queue scripts).

Each phase ends once the subscriber has every message, plus a fixed settle time (the
same for all) for the cluster bus to carry classic messages to the other nodes. Reported
per system: the publisher's rate and the server CPU per message summed over all nodes
(``INFO cpu`` user + sys, before and after), medians over the repetitions, and the
median of the per-repetition ratios sharded / classic. Also checks that a script's
SPUBLISH to a channel of another slot is refused (Redis 7.0: a script's shard channel
must hash to its keys' slot). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.redis_cluster import LocalCluster

TAG = "{bench:q}"
KEY, CHANNEL = f"oqron:bench:{TAG}:seq", f"oqron:bench:{TAG}:wake"
SCRIPT = "redis.call('INCR', KEYS[1]) redis.call(ARGV[1], ARGV[2], '1') return 1"
SETTLE_S = 0.3
SYSTEMS = ("PUBLISH", "SPUBLISH", "EVALSHA+PUBLISH", "EVALSHA+SPUBLISH")


class Subscriber:
    """Counts the messages of one (shard) channel on one node, in a thread."""

    def __init__(self, port: int, sharded: bool) -> None:
        self.count = 0
        self._pubsub = redis.Redis(port=port).pubsub()
        (self._pubsub.ssubscribe if sharded else self._pubsub.subscribe)(CHANNEL)
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop:
            message = self._pubsub.get_message(timeout=0.1)
            if message is not None and message["type"] in ("message", "smessage"):
                self.count += 1

    def wait_for(self, n: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.count < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the subscriber got {self.count} of {n} messages")
            time.sleep(0.005)

    def close(self) -> None:
        self._stop = True
        self._thread.join()
        self._pubsub.close()


@contextlib.contextmanager
def started_cluster(nodes: int) -> Iterator[LocalCluster]:
    workdir = Path(tempfile.mkdtemp(prefix="oqron-bench-cluster-"))
    cluster = LocalCluster(workdir)
    try:
        cluster.start(nodes)
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def cluster_cpu(cluster: LocalCluster) -> float:
    total = 0.0
    for port in cluster.ports:
        info = redis.Redis(port=port).info("cpu")
        total += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    return total


def run_phase(cluster: LocalCluster, client: redis.Redis, sha: str, system: str, n: int,
              batch: int) -> tuple[float, float]:
    """(messages per second at the publisher, server CPU µs per message over all nodes)."""
    sharded = "SPUBLISH" in system
    subscriber = Subscriber(client.connection_pool.connection_kwargs["port"], sharded)
    try:
        time.sleep(0.1)  # the subscription confirmed before the first message
        command = "SPUBLISH" if sharded else "PUBLISH"
        cpu_before, start = cluster_cpu(cluster), time.perf_counter()
        for first in range(0, n, batch):
            pipe = client.pipeline(transaction=False)
            for _ in range(min(batch, n - first)):
                if system.startswith("EVALSHA"):
                    pipe.evalsha(sha, 1, KEY, command, CHANNEL)
                else:
                    pipe.execute_command(command, CHANNEL, "1")
            pipe.execute()
        elapsed = time.perf_counter() - start
        subscriber.wait_for(n)
        time.sleep(SETTLE_S)
        cpu = cluster_cpu(cluster) - cpu_before
    finally:
        subscriber.close()
    return n / elapsed, cpu / n * 1e6


def check_script_slot_rule(client: redis.Redis, sha: str) -> str:
    """A script SPUBLISHing to a channel of another slot than its keys': refused?"""
    try:
        client.evalsha(sha, 1, KEY, "SPUBLISH", "oqron:bench:{elsewhere}:wake")
    except redis.ResponseError as exc:
        return f"refused: {exc}"
    return "ACCEPTED (no slot check)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=6, help="masters and replicas, one replica a master (>= 6)")
    args = parser.parse_args()
    with started_cluster(args.nodes) as cluster:
        owner = cluster.master_of(KEY)
        client = redis.Redis(port=owner)
        sha = client.script_load(SCRIPT)
        print(f"cluster ports {cluster.ports}; channel {CHANNEL} on master {owner}")
        print("script SPUBLISH to another slot:", check_script_slot_rule(client, sha))
        rates: dict[str, list[float]] = {s: [] for s in SYSTEMS}
        cpus: dict[str, list[float]] = {s: [] for s in SYSTEMS}
        loads = []
        for rep in range(args.repeat):
            order = list(SYSTEMS)
            random.shuffle(order)
            for system in order:
                rate, cpu = run_phase(cluster, client, sha, system, args.n, args.batch)
                rates[system].append(rate)
                cpus[system].append(cpu)
            loads.append(Path("/proc/loadavg").read_text().split()[0])
            print(f"rep {rep + 1}: " + ", ".join(f"{s} {rates[s][-1]:,.0f}/s {cpus[s][-1]:.1f}µs"
                                                for s in SYSTEMS) + f"  (load {loads[-1]})", flush=True)
        print(f"\n{args.nodes} nodes, N {args.n} per phase, batch {args.batch}, {args.repeat} repetitions, "
              f"load averages {' '.join(loads)}")
        print(f"{'system':<20}{'publisher msg/s':>18}{'cluster CPU µs/msg':>22}")
        for system in SYSTEMS:
            print(f"{system:<20}{statistics.median(rates[system]):>18,.0f}"
                  f"{statistics.median(cpus[system]):>22.2f}")
        for classic, sharded in (("PUBLISH", "SPUBLISH"), ("EVALSHA+PUBLISH", "EVALSHA+SPUBLISH")):
            cpu_ratio = statistics.median(s / c for s, c in zip(cpus[sharded], cpus[classic], strict=True))
            rate_ratio = statistics.median(s / c for s, c in zip(rates[sharded], rates[classic], strict=True))
            print(f"{sharded} / {classic}: CPU per message x{cpu_ratio:.2f}, publisher rate x{rate_ratio:.2f} "
                  "(medians of per-repetition ratios)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

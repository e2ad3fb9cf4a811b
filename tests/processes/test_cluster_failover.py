"""A Redis Cluster master SIGKILLed during a 5,000-job run in ``redis-postgres`` mode.

The master serving the queue's slot dies; the cluster promotes its replica by itself
(``cluster-node-timeout`` 2 s, no ``CLUSTER FAILOVER`` sent). The verdicts: every job
completes, no job ever runs twice at the same time (from the handlers' own records and
from the run records), and the same worker processes carry on without a restart.
"""

from __future__ import annotations

import itertools
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

from oqronkit.backends.redis.keys import queue_keys
from oqronkit.backends.types import Scope
from tests.processes.test_faults import concurrent_runs, fleet, make_config, producer, run_through_a_fault
from tests.redis_cluster import local_cluster

pytestmark = pytest.mark.slow
APP = "tests.processes.cluster_app"


def executions(run_dir: Path) -> dict[str, list[tuple[int, int, int]]]:
    """Every execution the handlers recorded: job id -> [(start ns, end ns, pid)], by start."""
    found: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for path in run_dir.glob("runs-*.txt"):
        for line in path.read_text().splitlines():
            job_id, pid, start, end = line.split()
            found[job_id].append((int(start), int(end), int(pid)))
    for runs in found.values():
        runs.sort()
    return found


def overlapping(found: dict[str, list[tuple[int, int, int]]]) -> list[str]:
    return [job_id for job_id, runs in found.items()
            if any(later[0] < earlier[1] for earlier, later in itertools.pairwise(runs))]


def test_a_master_killed_mid_run_loses_no_job_and_runs_none_twice_at_once(
        tmp_path, scope_names, pg_schema_url, monkeypatch):
    jobs = 5000
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    monkeypatch.setenv("OQRON_TEST_RUN_DIR", str(run_dir))
    with local_cluster() as cluster, producer(make_config(pg_schema_url, cluster.url, scope_names[0])) as engine:
        victim = cluster.master_of(queue_keys(Scope(engine.config.project, engine.config.environment), "bulk").ready)
        marks: dict[str, float] = {}

        def kill_master() -> None:
            marks["killed"] = time.monotonic()
            cluster.kill(victim)
            cluster.wait_failover(victim)  # the replica has taken over its slots
            marks["promoted"] = time.monotonic()

        with fleet(engine.config, tmp_path, app=APP) as workers:
            figures = run_through_a_fault(engine, workers, jobs, ms=5, fault_at=1500, fault=kill_master)
        assert victim not in cluster.masters()
        grouped, found = figures["grouped"], executions(run_dir)
        assert set(grouped) == figures["ids"] == set(found)
        assert overlapping(found) == [], workers.logs()
        assert concurrent_runs(grouped) == [], workers.logs()
        completed = {r["jobId"] for r in figures["runs"] if r["status"] == "completed"}
        assert completed == figures["ids"]
        assert engine.durable.count("queue_dlq:bulk") == 0
        after = {pid for runs in found.values() for start, _, pid in runs
                 if start / 1e9 > time.time() - (time.monotonic() - marks["promoted"])}
        assert after == figures["pids"], workers.logs()  # both workers, the same processes, carried on
        twice = sum(1 for runs in found.values() if len(runs) > 1)
        print(f"\nRedis Cluster failover with {figures['left_at_fault']} of {jobs} jobs left: the replica took "
              f"over {marks['promoted'] - marks['killed']:.1f} s after the SIGKILL; drained "
              f"{figures['after_fault_s']:.1f} s after; {twice} job(s) ran more than once, none at the same time "
              f"({sum(map(len, found.values()))} executions, pids {sorted(figures['pids'])}, {os.cpu_count()} cores)")

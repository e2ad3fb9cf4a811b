"""Three real worker processes run an every-second cron (``missed="run-all"``) while the
leader is SIGKILLed twice (the first time in the middle of a run): every second's slot
fires exactly once (no duplicate, no gap), the slots that fell inside a failover are
caught up within the lease TTL, and the run the dead leader left is resolved (failed
with ``LeaderLost``, re-run once)."""

from __future__ import annotations

import signal
import time
from collections import Counter

import pytest

from oqronkit import Engine, Registry
from oqronkit.clock import now_ms
from oqronkit.services.leader import LEADER_LOCK
from tests.engine.queue.conftest import wait_until

from .cron_app import FIRES
from .test_worker_processes import config, spawn, stop  # noqa: F401 - the config fixture

pytestmark = pytest.mark.slow
LEASE_MS = 10_000  # services/leader.py's default leader lease
SETTLE_S = 6.0  # how long each leader runs before the next kill


def leader_of(engine: Engine) -> str | None:
    return engine.hot.lock_owner(LEADER_LOCK, now_ms())


def pid_of(worker_id: str) -> int:
    return int(worker_id.rsplit("-", 2)[1])  # "<host>-<pid>-<random>"


def running_on(engine: Engine, worker_id: str) -> bool:
    records = engine.durable.list("runs", status="running", module="cron", limit=10).records
    return any(r.value["workerId"] == worker_id for r in records)


def slots_fired(engine: Engine) -> list[dict]:
    return [r.value for r in engine.durable.list("runs", name="tick", module="cron", limit=1000).records]


def test_leader_killed_twice_every_slot_fires_exactly_once(config):  # noqa: F811
    observer = Engine(config, registry=Registry())
    procs = {}
    try:
        for _ in range(3):
            proc = spawn(config, "--import", "tests.processes.cron_app")
            procs[proc.pid] = proc
        wait_until(lambda: leader_of(observer) is not None and slots_fired(observer), timeout=30)
        window_start = max(r["slotAt"] for r in slots_fired(observer)) + 1000
        kills = []
        for round_ in range(2):
            time.sleep(SETTLE_S)
            victim = leader_of(observer)
            assert victim is not None and pid_of(victim) in procs
            if round_ == 0:  # the first kill lands while the leader runs a handler
                wait_until(lambda v=victim: running_on(observer, v), timeout=10, interval=0.005)
            procs[pid_of(victim)].send_signal(signal.SIGKILL)
            procs[pid_of(victim)].wait(10)
            kills.append(now_ms())
            wait_until(lambda v=victim: leader_of(observer) not in (None, v), timeout=LEASE_MS / 1000 + 5)
        time.sleep(SETTLE_S)
        window_end = now_ms() - 3000  # leave the last slots time to finish
    finally:
        outputs = [stop(p) for p in procs.values()]
    runs = {r["slotAt"]: r for r in slots_fired(observer) if r.get("trigger") != "recovery"}
    wanted = list(range(window_start, window_end - window_end % 1000 + 1, 1000))
    assert len(wanted) >= 25, "the window should cover ~30 s"
    missing = [s for s in wanted if s not in runs]
    assert not missing, f"slots never fired: {missing}\n" + "\n".join(outputs)[-4000:]
    for slot in wanted:  # the claim id is the slot: one run record per slot by construction
        assert runs[slot]["id"] == f"cron:tick:{slot}"
    marks = Counter(r.value["slot"] for r in observer.durable.list(FIRES, limit=1000).records)
    lost = {r["slotAt"] for r in slots_fired(observer) if (r.get("error") or {}).get("type") == "LeaderLost"}
    duplicates = {s: n for s, n in marks.items() if s in wanted and n > 1 and s not in lost}
    assert not duplicates, f"slots executed more than once: {duplicates}"
    assert all(marks[s] >= 1 for s in wanted), "a claimed slot never executed"
    for kill in kills:  # slots inside each failover: run within the lease TTL of the kill (plus a tick)
        inside = [s for s in wanted if kill - 1000 <= s <= kill + LEASE_MS]
        assert inside
        late = {s: runs[s]["startedAt"] - max(s, kill) for s in inside}
        assert max(late.values()) <= LEASE_MS + 1500, late
        assert any(runs[s]["trigger"] == "catch-up" for s in inside)
        print("failover:", len(inside), "slots caught up at most", max(late.values()), "ms after the kill")
    assert lost, "the first kill should have left a run mid-way"
    for slot in lost:  # resolved: marked failed, then re-run once to completion
        again = [r for r in slots_fired(observer) if r["slotAt"] == slot and r["trigger"] == "recovery"]
        assert [r["status"] for r in again] == ["completed"] and marks[slot] >= 1
    state = observer.durable.get("cron_durable", "tick").value
    assert state["counters"]["missed"] >= 10 and state["backlog"] == []
    print("window", len(wanted), "slots; counters", state["counters"], "leader-lost", sorted(lost))
    observer.close()

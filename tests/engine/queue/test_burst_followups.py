"""A burst worker stops only once the jobs its own outcomes added elsewhere have run too:
a group's callback released by a member's death, in another queue whose consumer had
last looked (and found nothing) before that release."""

from __future__ import annotations

import time

from oqronkit import Engine, job_spec
from oqronkit.worker import WorkerProcess
from oqronkit.worker.limited import LimitedClaims


def test_a_burst_worker_runs_the_callback_its_last_outcome_released(engine: Engine, monkeypatch):
    ran: list[str] = []
    def die_later(ctx):  # dies once the callbacks' consumer has looked and found nothing
        time.sleep(0.4)
        ctx.discard("broken")

    members = engine.queue("burst-members", retries=0, handler=die_later)
    engine.queue("burst-callbacks", handler=lambda ctx: ran.append(ctx.data["what"]))
    engine.group([job_spec(members, {"n": 1})], on_failure=("burst-callbacks", {"what": "alert"}))
    claim = LimitedClaims.claim

    def slow_callbacks_claim(self, limit):  # that consumer's answers come late, as under load
        leases = claim(self, limit)
        if self.queue.name == "burst-callbacks":
            time.sleep(0.3)
        return leases

    monkeypatch.setattr(LimitedClaims, "claim", slow_callbacks_claim)
    WorkerProcess(engine, burst=True, services=False, poll_interval=0.05).run()
    assert ran == ["alert"], "the burst worker stopped before the group's callback ran"

"""What the leader does with one definition at one instant: pure functions of the
definition, its control record, the time and how many of its runs are in flight.

Slots after downtime (``missed``): a slot is *late* when it is due by more than
``late_after_ms`` (default 2 s, well above the tick). Late slots are counted as missed;
``skip`` runs none of them; ``run-once`` runs the latest one, unless an on-time slot is
due too (that run already stands for the missed period); ``run-all`` runs the latest
``max_missed_runs``; ``catch_up_window`` excludes late slots older than the window. On-time
slots always run (subject to ``overlap``). Run-all catch-up slots wait in the control
record's backlog (bounded by ``max_missed_runs`` plus a little room) and run one at a time,
in slot order, unless ``overlap="allow"``.

Overlap, when a run of the definition is still in flight: ``skip`` drops the new slot,
``buffer-one`` keeps at most one waiting, ``cancel-previous`` asks the running one to
stop and starts the new one, ``allow`` runs both.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .definition import Definition
from .timing import EveryTiming

SCAN_CAP = 10_000  # slots enumerated one by one per pass; beyond this the planner jumps to now
BACKLOG_SLACK = 10  # room for on-time slots queued behind a full catch-up backlog


@dataclass(slots=True)
class SlotPlan:
    fires: list[tuple[int, bool]]  # (slot, is catch-up), ascending
    missed: int
    skipped: int
    next_run_at: int | None
    last_slot: int | None


def plan_slots(d: Definition, next_run_at: int | None, now: int, *, late_after_ms: int) -> SlotPlan:
    """The due slots from ``next_run_at`` up to ``now`` and what the missed policy makes
    of them. Never materialises more than ``SCAN_CAP`` slots (an every-second cron after
    a week of downtime is counted arithmetically, not enumerated)."""
    timing = d.timing
    keep = d.max_missed_runs + 8
    recent: deque[int] = deque(maxlen=keep)
    total, slot, last = 0, next_run_at, None
    while slot is not None and slot + d.jitter_for(slot) <= now and total < SCAN_CAP:
        recent.append(slot)
        total, last = total + 1, slot
        slot = timing.next_after(slot)
    if total >= SCAN_CAP and slot is not None and slot <= now:
        latest = timing.previous(now)
        tail: list[int] = []
        cursor = latest
        while cursor is not None and cursor >= slot and len(tail) < keep:
            tail.append(cursor)
            cursor = timing.previous(cursor - 1)
        if isinstance(timing, EveryTiming) and latest is not None:
            total += timing.count(slot, latest)
        else:  # a lower bound: the exact count would mean enumerating them all
            total += len(tail)
        recent = deque(reversed(tail), maxlen=keep)
        last = latest if latest is not None else last
        slot = timing.next_after(latest) if latest is not None else slot
    on_time = [s for s in recent if now - (s + d.jitter_for(s)) <= late_after_ms]
    late = [s for s in recent if now - (s + d.jitter_for(s)) > late_after_ms]
    eligible = [s for s in late if d.catch_up_window_ms is None or now - s <= d.catch_up_window_ms]
    # run-once: one run stands for the missed period; an on-time slot already is that run.
    chosen = {"skip": [], "run-once": [] if on_time else eligible[-1:],
              "run-all": eligible[-d.max_missed_runs:]}[d.missed]
    missed = total - len(on_time)
    return SlotPlan(
        fires=[(s, True) for s in chosen] + [(s, False) for s in on_time],
        missed=missed, skipped=missed - len(chosen), next_run_at=slot, last_slot=last,
    )


@dataclass(slots=True)
class Fire:
    """One run to claim and start: a slot, a retry, a backlog item or a run-now."""

    run_id: str
    claim: str
    trigger: str
    slot: int | None
    attempt: int
    payload: Any
    counts_as_run: bool = True


@dataclass(slots=True)
class Decision:
    fires: list[Fire] = field(default_factory=list)
    base_pointer: int | None = None
    next_run_at: int | None = None
    last_slot: int | None = None
    backlog: list[dict[str, Any]] | None = None  # the new backlog (None: unchanged)
    counters: dict[str, int] = field(default_factory=dict)
    manual_done: set[str] = field(default_factory=set)
    retries_done: set[str] = field(default_factory=set)
    cancel_previous: bool = False
    pointer_moved: bool = False
    at: int = 0

    def changes(self) -> bool:
        return bool(self.fires or self.pointer_moved or self.counters or self.backlog is not None
                    or self.cancel_previous)

    def apply(self, value: dict[str, Any]) -> bool:
        """Apply this decision to a (possibly newer) control record; the pointer and
        backlog only if nobody reset the pointer meanwhile (a resume or an upgrade)."""
        if not self.changes():
            return False
        if value.get("nextRunAt") == self.base_pointer:
            if self.pointer_moved:
                value["nextRunAt"] = self.next_run_at
                value["lastSlotAt"] = max(self.last_slot or 0, value.get("lastSlotAt") or 0) or None
                if self.next_run_at is None:  # a one-off that fired, or a rule that ended (COUNT/UNTIL)
                    value["done"] = True
            if self.backlog is not None:
                value["backlog"] = self.backlog
        counters = value.setdefault("counters", {})
        for name, delta in self.counters.items():
            counters[name] = counters.get(name, 0) + delta
        value["manual"] = [m for m in value.get("manual", []) if m["id"] not in self.manual_done]
        value["retries"] = [r for r in value.get("retries", []) if retry_key(r) not in self.retries_done]
        if self.fires:
            value["lastRunId"] = self.fires[-1].run_id
            value["lastFiredAt"] = self.at
        return True


def catching_up(backlog: list[dict[str, Any]]) -> bool:
    return any(item["catchUp"] for item in backlog)


def retry_key(item: dict[str, Any]) -> str:
    return f"{item['claim']}#{item['attempt']}"


def slot_fire(d: Definition, slot: int, *, catch_up: bool) -> Fire:
    claim = f"{d.kind}:{d.name}:{slot}"
    return Fire(claim, claim, "catch-up" if catch_up else d.kind, slot, 1, d.payload)


def decide(d: Definition, state: dict[str, Any], now: int, *, busy: int, late_after_ms: int) -> Decision:
    """Everything to do for one definition now (see the module docstring)."""
    dec = Decision(base_pointer=state.get("nextRunAt"), at=now)
    _take_manual_runs(dec, d, state)
    if state.get("paused") or (state.get("done") and not state.get("retries")):
        return dec
    _take_due_retries(dec, d, state, now)
    if state.get("done"):
        return dec
    plan = plan_slots(d, state.get("nextRunAt"), now, late_after_ms=late_after_ms)
    if plan.last_slot is not None or plan.next_run_at != state.get("nextRunAt"):
        dec.pointer_moved, dec.next_run_at, dec.last_slot = True, plan.next_run_at, plan.last_slot
    if plan.missed:
        dec.counters["missed"] = dec.counters.get("missed", 0) + plan.missed
    _take_slots(dec, d, plan, state.get("backlog", []), busy=busy)
    return dec


def _take_manual_runs(dec: Decision, d: Definition, state: dict[str, Any]) -> None:
    """Operators' run-now requests: always run, even paused or overlapping."""
    for request in state.get("manual", []):
        claim = f"{d.kind}:{d.name}:manual:{request['id']}"
        dec.fires.append(Fire(claim, claim, "manual", None, 1, request.get("payload"), counts_as_run=False))
        dec.manual_done.add(request["id"])
        dec.counters["manual"] = dec.counters.get("manual", 0) + 1


def _take_due_retries(dec: Decision, d: Definition, state: dict[str, Any], now: int) -> None:
    """The booked re-runs (failures, lost leaders) whose time has come."""
    for item in state.get("retries", []):
        if item["dueAt"] <= now:
            run_id = retry_key(item)
            dec.fires.append(Fire(run_id, item["claim"], item.get("trigger", "retry"), item.get("slot"),
                                  item["attempt"], item.get("payload", d.payload), counts_as_run=False))
            dec.retries_done.add(run_id)


def _take_slots(dec: Decision, d: Definition, plan: SlotPlan, stored_backlog: list[dict[str, Any]], *,
                busy: int) -> None:
    """Start, hold back (in the backlog) or skip each due slot under the overlap policy;
    then start backlog items while nothing of the definition runs."""
    skipped = plan.skipped
    backlog = list(stored_backlog)
    in_flight = busy
    started: list[Fire] = []
    for slot, catch_up in plan.fires:
        fire = slot_fire(d, slot, catch_up=catch_up)
        if d.overlap == "allow":
            started.append(fire)
        elif (catch_up and d.missed == "run-all") or (backlog and (not in_flight or catching_up(backlog))):
            backlog.append({"slot": slot, "catchUp": catch_up})  # behind the catch-up, in slot order
        elif in_flight:
            if d.overlap == "cancel-previous":
                dec.cancel_previous = True
                started.append(fire)
            elif d.overlap == "buffer-one" and not any(not b["catchUp"] for b in backlog):
                backlog.append({"slot": slot, "catchUp": False})
            else:
                skipped += 1
        else:
            started.append(fire)
            in_flight += 1
    while backlog and not in_flight:
        item = backlog.pop(0)
        started.append(slot_fire(d, item["slot"], catch_up=item["catchUp"]))
        in_flight += 1
    cap = d.max_missed_runs + BACKLOG_SLACK
    if len(backlog) > cap:  # keep the most recent; the dropped ones are skipped
        skipped += len(backlog) - cap
        backlog = backlog[-cap:]
    if backlog != stored_backlog:
        dec.backlog = backlog
    if skipped:
        dec.counters["skipped"] = dec.counters.get("skipped", 0) + skipped
    if started:
        dec.counters["run"] = dec.counters.get("run", 0) + len(started)
    dec.fires.extend(started)


def may_rerun(d: Definition, attempts: int, *, leader_lost: bool) -> bool:
    """Whether a failed attempt gets another one: ``retries`` apply to every failure;
    a run whose leader died (``leader_lost``) gets one extra attempt when the missed
    policy is run-once or run-all (at-least-once), none beyond ``retries`` under
    ``skip`` (at-most-once). The extra attempt is bounded (``retries + 2`` attempts in
    all), so a handler that kills its process cannot take down every leader in turn."""
    limit = d.retries + 1 + (1 if leader_lost and d.missed != "skip" else 0)
    return attempts < limit


def retry_item(d: Definition, run: Mapping[str, Any], now: int, *, leader_lost: bool) -> dict[str, Any] | None:
    """The control record's pending-retry entry for a failed run, or None."""
    from ..queues.backoff import Backoff

    attempts = run.get("attempts") or 1
    if not may_rerun(d, attempts, leader_lost=leader_lost):
        return None
    slot = run.get("slotAt")
    if leader_lost and slot is not None and d.catch_up_window_ms is not None and now - slot > d.catch_up_window_ms:
        return None
    delay = 0 if leader_lost else Backoff.from_value(d.backoff).delay_ms(attempts)
    return {"claim": run.get("claimId") or run["id"], "slot": slot, "attempt": attempts + 1, "dueAt": now + delay,
            "trigger": "recovery" if leader_lost else "retry", "payload": run.get("input")}

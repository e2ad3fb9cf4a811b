"""The control record (``cron_durable`` / ``schedule_durable``, record kind ``control``):
pointer, pause, version, counters and the small queues of pending work, plus storing
definitions under the version rules.

Every write is a compare-and-set on the record's ``rev``, so the leader's pointer
advance, an operator's pause and a finished run's retry never overwrite each other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..backends.types import ABSENT
from ..clock import now_ms
from ..errors import InvalidState, OqronError, UnknownSchedule
from ..namespaces import SCHEDULER_CONTROL
from .definition import Definition

if TYPE_CHECKING:
    from ..engine import Engine

logger = logging.getLogger(__name__)
CHANGES_COUNTER = "scheduler:changes"
CHANGES_GROUP = "scheduler_changes"
CHANGES_TTL_MS = 120_000
MAX_MANUAL_PENDING = 20
CAS_ATTEMPTS = 100
#: The time source of operator actions (pause, run-now, trigger...); tests replace it
#: together with the scheduler's own ``clock``.
clock: Callable[[], int] = now_ms


def current_ms() -> int:
    return clock()


def fresh_control(definition: Definition, now: int) -> dict[str, Any]:
    return {
        "name": definition.name, "kind": definition.kind, "version": definition.version, "rev": 0,
        "paused": False, "pausedAt": None, "resumedAt": None,
        "nextRunAt": definition.timing.initial(now), "lastSlotAt": None, "lastFiredAt": None, "lastRunId": None,
        "done": False, "counters": {"missed": 0, "skipped": 0, "run": 0, "manual": 0},
        "backlog": [], "retries": [], "manual": [], "createdAt": now, "updatedAt": now,
    }


def update_control(
    engine: Engine, kind: str, name: str, mutate: Callable[[dict[str, Any]], bool | None], *,
    now: int | None = None, expires_at: int | None = None, current: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """Apply ``mutate`` to a fresh copy of the control record and store it if nothing
    changed it meanwhile, retrying on conflict. ``mutate`` returns False to write
    nothing. ``current`` is a copy believed up to date (the leader's cache): the first
    attempt uses it without a read. Returns the stored value (None if there is none)."""
    durable, namespace = engine.durable, SCHEDULER_CONTROL[kind]
    for _ in range(CAS_ATTEMPTS):
        if current is not None:
            base, current = current, None
        else:
            record = durable.get(namespace, name)
            if record is None:
                return None
            base = record.value
        value = _copy(base)
        if mutate(value) is False:
            return base
        rev = base.get("rev", 0)
        value["rev"] = rev + 1
        value["updatedAt"] = now if now is not None else current_ms()
        if durable.compare_and_set(namespace, name, expect={"rev": rev}, value=value, expires_at=expires_at):
            return value
    raise InvalidState(f"{kind} {name!r}: the control record kept changing; gave up after {CAS_ATTEMPTS} tries.")


def _copy(value: dict[str, Any]) -> dict[str, Any]:
    """A copy deep enough for the mutations above: they replace or append to the
    record's lists and dicts, never edit the items inside them (cheaper than deepcopy,
    which showed up first in the tick profile)."""
    return {k: v.copy() if isinstance(v, (dict, list)) else v for k, v in value.items()}


def signal_change(engine: Engine, kind: str, name: str, now: int) -> None:
    """Tell the leader to re-read one definition now. Each change takes the next number
    of a hot-plane counter and is stored under that number, so the leader reads exactly
    the changes it has not seen (it also re-reads every control record on a slow sweep,
    so a lost signal only delays the change)."""
    try:
        seq = engine.hot.incr(CHANGES_COUNTER)
        engine.hot.kv_set(CHANGES_GROUP, {str(seq): f"{kind}/{name}"}, ttl_ms=CHANGES_TTL_MS, now=now)
    except OqronError as exc:
        logger.warning("could not signal a change of %s %s to the leader: %s", kind, name, exc,
                       extra={"action": "scheduler.signal_failed"})


def store_definition(engine: Engine, code: Definition, now: int) -> tuple[Definition, dict[str, Any]]:
    """Write a declared definition under the version rules and make sure its control
    record exists. Returns the definition in force (the stored one when it is newer)
    and the control record.

    * none stored: store it;
    * code newer: update the definition, keep pointer, pause and counters (the pointer
      restarts from now only if the timing changed);
    * same version, different content: update and warn (bump ``version`` so that older
      nodes cannot overwrite it during a rolling deploy);
    * code older: keep the stored definition and warn.
    """
    durable = engine.durable
    record = durable.get(code.kind, code.name)
    stored = Definition.from_record(record.value) if record is not None else None
    effective, changed = code, False
    if stored is None:
        value = {**code.to_record(), "createdAt": now, "updatedAt": now}
        if not durable.insert(code.kind, code.name, value):
            return store_definition(engine, code, now)  # another node stored it first: apply the rules
        changed = True
    elif code.version < stored.version:
        logger.warning("%s %s: this code declares version %d but version %d is stored; keeping the stored one",
                       code.kind, code.name, code.version, stored.version, extra={"action": "scheduler.downgrade"})
        effective = stored
    elif code.version > stored.version or not code.same_as(stored):
        if code.version == stored.version:
            logger.warning("%s %s changed without a version bump; storing it (bump version= so older nodes "
                           "cannot overwrite it)", code.kind, code.name, extra={"action": "scheduler.unversioned"})
        created = record.value.get("createdAt", now) if record is not None else now
        durable.put(code.kind, code.name, {**code.to_record(), "createdAt": created, "updatedAt": now})
        changed = True
    control = ensure_control(engine, effective, now)
    if changed and stored is not None:
        control = _adopt(engine, effective, stored, now) or control
    if changed:
        signal_change(engine, code.kind, code.name, now)
    return effective, control


def _adopt(engine: Engine, new: Definition, old: Definition, now: int) -> dict[str, Any] | None:
    def mutate(value: dict[str, Any]) -> None:
        value["version"] = new.version
        if new.timing_key() != old.timing_key():  # new slots: the old pointer and backlog mean nothing now
            value["nextRunAt"] = new.timing.initial(now)
            value["backlog"], value["done"] = [], False

    return update_control(engine, new.kind, new.name, mutate, now=now)


def ensure_control(engine: Engine, definition: Definition, now: int) -> dict[str, Any]:
    namespace = definition.control_namespace
    record = engine.durable.get(namespace, definition.name)
    if record is not None:
        return record.value
    value = fresh_control(definition, now)
    if engine.durable.compare_and_set(namespace, definition.name, expect=ABSENT, value=value):
        return value
    record = engine.durable.get(namespace, definition.name)  # another node created it first
    return record.value if record is not None else value


def load(engine: Engine, kind: str, name: str) -> tuple[Definition, dict[str, Any]]:
    """The stored definition and control record, or :class:`UnknownSchedule`."""
    record = engine.durable.get(kind, name)
    if record is None:
        raise UnknownSchedule(f"No {kind} named {name!r} is stored in {engine.config.project}/"
                              f"{engine.config.environment}.")
    definition = Definition.from_record(record.value)
    return definition, ensure_control(engine, definition, current_ms())


# -- operator actions (the board and the Cron/Schedule objects call these) ---------------------


def set_paused(engine: Engine, kind: str, name: str, paused: bool, *, now: int | None = None) -> dict[str, Any]:
    """Pause or resume cluster-wide. Resuming restarts the pointer from now: slots that
    fell inside the pause are dropped (neither missed nor skipped), as an operator who
    paused a schedule expects."""
    at = now if now is not None else current_ms()
    definition, _ = load(engine, kind, name)

    def mutate(value: dict[str, Any]) -> bool | None:
        if bool(value.get("paused")) == paused:
            return False
        value["paused"] = paused
        if paused:
            value["pausedAt"] = at
        else:
            value["resumedAt"] = at
            if not value.get("done"):
                value["nextRunAt"] = definition.timing.initial(at)
                value["backlog"] = []
        return None

    value = update_control(engine, kind, name, mutate, now=at)
    signal_change(engine, kind, name, at)
    logger.info("%s %s %s", kind, name, "paused" if paused else "resumed",
                extra={"action": "scheduler.pause" if paused else "scheduler.resume"})
    return value or {}


def request_run(engine: Engine, kind: str, name: str, payload: Any, *, now: int | None = None,
                use_default: bool = True) -> str:
    """Ask the leader to run a definition now (it runs even while paused). Returns the
    id the run record will have."""
    from ..ids import new_id

    at = now if now is not None else current_ms()
    definition, _ = load(engine, kind, name)
    request = {"id": new_id(), "requestedAt": at, "payload": definition.payload if use_default else payload}

    def mutate(value: dict[str, Any]) -> None:
        pending = value.setdefault("manual", [])
        if len(pending) >= MAX_MANUAL_PENDING:
            raise InvalidState(f"{kind} {name!r} already has {len(pending)} run-now requests waiting for the leader.")
        pending.append(request)

    update_control(engine, kind, name, mutate, now=at)
    signal_change(engine, kind, name, at)
    return f"{kind}:{name}:manual:{request['id']}"


def cancel_schedule(engine: Engine, kind: str, name: str, *, now: int | None = None) -> None:
    """Stop a (typically dynamic) definition for good: no further fires."""
    at = now if now is not None else current_ms()

    def mutate(value: dict[str, Any]) -> None:
        value.update(done=True, nextRunAt=None, backlog=[], retries=[], cancelledAt=at)

    update_control(engine, kind, name, mutate, now=at)
    signal_change(engine, kind, name, at)

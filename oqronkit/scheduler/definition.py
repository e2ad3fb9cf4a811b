"""A cron or schedule definition: validated options, its stored JSON shape (namespace
``cron`` / ``schedule``, record kind ``definition``) and its compiled timing."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any, Literal

from ..errors import InvalidJob, InvalidSchedule
from ..namespaces import SCHEDULER_CONTROL
from ..queues.backoff import BackoffValue, make_backoff, to_ms
from .rrule import RRuleTiming
from .timing import CronTiming, EveryTiming, NeverTiming, OnceTiming, Timing, get_zone

Kind = Literal["cron", "schedule"]
MISSED = ("skip", "run-once", "run-all")
OVERLAP = ("skip", "allow", "buffer-one", "cancel-previous")
MAX_MISSED_RUNS = 1000  # the catch-up backlog lives in the control record; keep it well under a record's size
MAX_PAYLOAD_BYTES = 64 * 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,89}$")


def check_name(name: Any, kind: str, *, dynamic: bool = False) -> str:
    """1-90 characters of letters, digits, ``_ . -`` (starting with a letter or digit);
    a dynamic schedule is ``base:key`` with both parts of that form."""
    parts = name.split(":", 1) if dynamic and isinstance(name, str) else [name]
    if not all(isinstance(p, str) and _NAME.match(p) for p in parts) or (dynamic and len(parts) != 2):
        raise InvalidSchedule(
            f"{kind} name {name!r} must be 1-90 characters of letters, digits, '_', '.' or '-', "
            "starting with a letter or digit (no ':' or spaces: it is part of run ids)."
        )
    return str(name)  # checked above: a str


def _ms_option(value: Any, what: str) -> int | None:
    try:
        return to_ms(value, what=what)
    except InvalidJob as exc:
        raise InvalidSchedule(str(exc)) from exc


def epoch_ms(value: Any, what: str) -> int | None:
    """An aware datetime or epoch milliseconds."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InvalidSchedule(f"{what} must be timezone-aware (e.g. datetime(..., tzinfo=ZoneInfo('UTC'))).")
        return int(value.timestamp() * 1000)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise InvalidSchedule(f"{what} must be an aware datetime or epoch milliseconds, got {value!r}.")


def handler_name(fn: Any) -> str | None:
    return None if fn is None else f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


@dataclass(frozen=True, kw_only=True)
class Definition:
    """Everything the leader needs to fire a cron or schedule (the handler aside)."""

    kind: Kind
    name: str
    expression: str | None = None
    every_ms: int | None = None
    run_at: int | None = None
    rrule: str | None = None
    timezone: str = "UTC"
    missed: str = "skip"
    catch_up_window_ms: int | None = None
    overlap: str = "skip"
    jitter_ms: int = 0
    timeout_ms: int | None = None
    retries: int = 0
    backoff: BackoffValue = field(default_factory=lambda: make_backoff(None).to_value())
    max_missed_runs: int = 100
    payload: Any = None
    handler: str | None = None
    as_job: bool = False
    version: int = 1
    base: str | None = None  # the declared schedule a dynamic (triggered) schedule came from

    @cached_property
    def timing(self) -> Timing:
        if self.expression is not None:
            return CronTiming(self.expression, self.timezone)
        if self.rrule is not None:
            return RRuleTiming(self.rrule, self.timezone, self.run_at)
        if self.every_ms is not None:
            return EveryTiming(self.every_ms, self.run_at or 0)
        if self.run_at is not None:
            return OnceTiming(self.run_at, self.timezone)
        return NeverTiming()

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.name)

    @property
    def control_namespace(self) -> str:
        return SCHEDULER_CONTROL[self.kind]

    @property
    def queue_name(self) -> str:
        """The internal queue of a job-mode definition (dynamic schedules share their base's)."""
        return f"{self.kind}.{self.base or self.name}"

    @property
    def declared_name(self) -> str:
        return self.base or self.name

    def timing_key(self) -> tuple[Any, ...]:
        """What decides the slots: a change here resets the pointer on upgrade."""
        return (self.expression, self.every_ms, self.run_at, self.rrule, self.timezone)

    def jitter_for(self, slot: int) -> int:
        """A deterministic delay in ``[0, jitter_ms]`` for one slot, the same on every
        leader, so jitter never changes which slot a fire claims."""
        if not self.jitter_ms:
            return 0
        return (hash_int(f"{self.kind}:{self.name}:{slot}")) % (self.jitter_ms + 1)

    def to_record(self) -> dict[str, Any]:
        return {
            "name": self.name, "kind": self.kind, "expression": self.expression, "every": self.every_ms,
            "runAt": self.run_at, "rrule": self.rrule, "timezone": self.timezone, "missed": self.missed,
            "catchUpWindowMs": self.catch_up_window_ms, "overlap": self.overlap, "jitterMs": self.jitter_ms,
            "timeoutMs": self.timeout_ms, "retries": self.retries, "backoff": self.backoff,
            "maxMissedRuns": self.max_missed_runs, "payload": self.payload, "handler": self.handler,
            "asJob": self.as_job, "queue": self.queue_name if self.as_job else None, "version": self.version,
            "base": self.base, "dynamic": self.base is not None, "description": self.timing.describe(),
        }

    @classmethod
    def from_record(cls, value: dict[str, Any]) -> Definition:
        return cls(
            kind=value["kind"], name=value["name"], expression=value.get("expression"),
            every_ms=value.get("every"), run_at=value.get("runAt"), rrule=value.get("rrule"),
            timezone=value.get("timezone", "UTC"), missed=value.get("missed", "skip"),
            catch_up_window_ms=value.get("catchUpWindowMs"), overlap=value.get("overlap", "skip"),
            jitter_ms=value.get("jitterMs") or 0, timeout_ms=value.get("timeoutMs"),
            retries=value.get("retries") or 0, backoff=value.get("backoff") or make_backoff(None).to_value(),
            max_missed_runs=value.get("maxMissedRuns") or 100, payload=value.get("payload"),
            handler=value.get("handler"), as_job=bool(value.get("asJob")), version=value.get("version") or 1,
            base=value.get("base"),
        )

    def same_as(self, other: Definition) -> bool:
        return asdict(self) == asdict(other)

    def derive(self, **changes: Any) -> Definition:
        return replace(self, **changes)


def hash_int(text: str) -> int:
    import hashlib

    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def build_definition(
    kind: Kind,
    name: str,
    *,
    expression: str | None = None,
    every: float | timedelta | None = None,
    run_at: datetime | int | None = None,
    rrule: str | None = None,
    timezone: str = "UTC",
    missed: str = "skip",
    catch_up_window: float | timedelta | None = None,
    overlap: str = "skip",
    jitter: float | timedelta | None = None,
    timeout: float | timedelta | None = None,
    retries: int = 0,
    backoff: Any = None,
    max_missed_runs: int = 100,
    payload: Any = None,
    handler: str | None = None,
    as_job: bool = False,
    version: int = 1,
    base: str | None = None,
    now: int,
) -> Definition:
    """Validate every option and return the definition; raises :class:`InvalidSchedule`
    naming the field and the fix."""
    check_name(name, kind, dynamic=base is not None)
    label = f"{kind} {name!r}"
    _check_policies(label, missed=missed, overlap=overlap, as_job=as_job, retries=retries, version=version,
                    max_missed_runs=max_missed_runs)
    get_zone(timezone)
    payload_text = _payload_json(label, payload)
    try:
        backoff_value = make_backoff(backoff).to_value()
    except InvalidJob as exc:
        raise InvalidSchedule(f"{label}: {exc}") from exc
    definition = Definition(
        kind=kind, name=name, expression=expression, every_ms=_ms_option(every, f"{label} every"),
        run_at=epoch_ms(run_at, f"{label} run_at"), rrule=rrule, timezone=timezone, missed=missed,
        catch_up_window_ms=_ms_option(catch_up_window, f"{label} catch_up_window"), overlap=overlap,
        jitter_ms=_ms_option(jitter, f"{label} jitter") or 0, timeout_ms=_ms_option(timeout, f"{label} timeout"),
        retries=retries, backoff=backoff_value, max_missed_runs=max_missed_runs,
        payload=json.loads(payload_text), handler=handler, as_job=as_job, version=version, base=base,
    )
    _check_timing(definition, label, now)
    return definition


def _check_policies(label: str, *, missed: str, overlap: str, as_job: bool, retries: int, version: int,
                    max_missed_runs: int) -> None:
    """The missed and overlap policies, and the counts."""
    if missed not in MISSED:
        raise InvalidSchedule(f"{label}: missed must be one of {', '.join(MISSED)}, got {missed!r}.")
    if overlap not in OVERLAP:
        raise InvalidSchedule(f"{label}: overlap must be one of {', '.join(OVERLAP)}, got {overlap!r}.")
    if as_job and overlap == "buffer-one":
        raise InvalidSchedule(f"{label}: overlap='buffer-one' is not available with as_job=True (the queue "
                              "holds the work); use 'skip', 'allow' or 'cancel-previous'.")
    for what, value in (("retries", retries), ("version", version), ("max_missed_runs", max_missed_runs)):
        if not isinstance(value, int) or isinstance(value, bool) or value < (0 if what == "retries" else 1):
            raise InvalidSchedule(f"{label}: {what} must be an integer >= {0 if what == 'retries' else 1}.")
    if max_missed_runs > MAX_MISSED_RUNS:
        raise InvalidSchedule(f"{label}: max_missed_runs is at most {MAX_MISSED_RUNS} (the catch-up backlog is "
                              "kept in the control record).")
    if not isinstance(as_job, bool):
        raise InvalidSchedule(f"{label}: as_job must be True or False.")


def _payload_json(label: str, payload: Any) -> str:
    """The payload as compact JSON, refused when it is not JSON or too large to keep in a record."""
    try:
        payload_text = json.dumps(payload, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidSchedule(f"{label}: payload is not JSON-serialisable ({exc}).") from exc
    if len(payload_text.encode()) > MAX_PAYLOAD_BYTES:
        raise InvalidSchedule(f"{label}: payload is over {MAX_PAYLOAD_BYTES:,} bytes of JSON; pass a reference.")
    return payload_text


def _check_timing(d: Definition, label: str, now: int) -> None:
    given = [n for n, v in (("expression", d.expression), ("every", d.every_ms), ("rrule", d.rrule)) if v is not None]
    if d.kind == "cron" and len(given) != 1:
        raise InvalidSchedule(f"{label}: give exactly one of expression or every= (got {', '.join(given) or 'none'}).")
    if d.kind == "cron" and d.run_at is not None:
        raise InvalidSchedule(f"{label}: run_at belongs to oqronkit.schedule(); crons fire on their expression.")
    if d.kind == "schedule" and len(given) > 1:
        raise InvalidSchedule(f"{label}: give at most one of every= or rrule= (with an optional run_at start).")
    try:
        timing = d.timing
    except ValueError as exc:  # InvalidSchedule already, or a parser error wrapped here
        raise InvalidSchedule(f"{label}: {exc}") from exc
    if timing.recurring:
        first = timing.next_after(now)
        if first is None:
            raise InvalidSchedule(f"{label}: {timing.describe()} never fires after now; check the fields.")
        if d.jitter_ms:
            gap = (timing.next_after(first) or first + d.jitter_ms + 1) - first
            if d.jitter_ms >= gap:
                raise InvalidSchedule(f"{label}: jitter ({d.jitter_ms} ms) must be shorter than the interval "
                                      f"between fires ({gap} ms), or slots would overtake each other.")

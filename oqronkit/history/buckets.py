"""The rollup's record: one bucket of runs per (resolution, scope, key, start), its id,
its JSON shape, and how runs add to it and buckets merge."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ..namespaces import METRICS_DAY, METRICS_HOUR, METRICS_MINUTE
from .sketch import Sketch

Resolution = Literal["minute", "hour", "day"]
Scope = Literal["all", "queue", "handler", "topic"]
MINUTE_MS: Final = 60_000
HOUR_MS: Final = 3_600_000
DAY_MS: Final = 86_400_000
RESOLUTION_MS: Final[dict[Resolution, int]] = {"minute": MINUTE_MS, "hour": HOUR_MS, "day": DAY_MS}
RESOLUTION_NAMESPACE: Final[dict[Resolution, str]] = {"minute": METRICS_MINUTE, "hour": METRICS_HOUR,
                                                      "day": METRICS_DAY}
#: What each scope's key is: every run ("*"), a queue, a handler (the run's name, any
#: module), a topic's consumer group ("topic/group").
SCOPES: Final[tuple[Scope, ...]] = ("all", "queue", "handler", "topic")
ALL_KEY: Final = "*"
#: Run statuses that may still change: a bucket holding one is rolled again (rollup.py).
OPEN_STATUSES: Final = frozenset({"running", "queued"})
#: Modules whose runs come from a queue's jobs (their name is the queue's).
QUEUE_MODULES: Final = frozenset({"queue", "worker", "webhook", "topic"})
MANIFEST: Final = "keys"


def bucket_id(start: int, scope: str, key: str) -> str:
    """The bucket's summary (counts and quantiles: what a chart reads). Deterministic: a
    rollup run twice (or by another leader) replaces, never adds."""
    return f"{start:013d}|{scope}|{key}"


def sketch_id(start: int, scope: str, key: str) -> str:
    """The whole bucket with its sketches (what a merge reads); '#' where a summary has
    '|', so no key can make one id the other's."""
    return f"{start:013d}#{scope}|{key}"


def manifest_id(start: int) -> str:
    """The record listing the (scope, key) pairs that have a bucket starting at ``start``."""
    return f"{start:013d}|{MANIFEST}"


def floor_to(at: int, resolution: Resolution) -> int:
    step = RESOLUTION_MS[resolution]
    return at - at % step


def keys_of_run(run: Mapping[str, Any]) -> Iterator[tuple[Scope, str]]:
    """Each (scope, key) a run counts toward."""
    yield "all", ALL_KEY
    name = run.get("name")
    if not isinstance(name, str) or not name:
        return
    yield "handler", name
    if run.get("jobId") is not None and run.get("module") in QUEUE_MODULES:
        queue = run.get("queue")
        yield "queue", queue if isinstance(queue, str) and queue else name
    topic, group = run.get("topic"), run.get("group")
    if isinstance(topic, str) and isinstance(group, str):
        yield "topic", f"{topic}/{group}"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass
class Bucket:
    """Runs of one (scope, key) in one interval: outcomes, retries, duration and wait sketches."""

    scope: str
    key: str
    start: int
    outcomes: dict[str, int] = field(default_factory=dict)
    retries: int = 0
    open: int = 0  # runs still running or queued when it was rolled
    duration: Sketch = field(default_factory=Sketch)
    wait: Sketch = field(default_factory=Sketch)

    @property
    def runs(self) -> int:
        return sum(self.outcomes.values())

    def add_run(self, status: str, attempts: Any, duration_ms: float | None, wait_ms: float | None) -> None:
        self.outcomes[status] = self.outcomes.get(status, 0) + 1
        if status in OPEN_STATUSES:
            self.open += 1
            return
        if isinstance(attempts, int) and attempts > 1:
            self.retries += 1
        if duration_ms is not None:
            self.duration.add(duration_ms)
        if wait_ms is not None:
            self.wait.add(wait_ms)

    def forget_open(self, status: str) -> None:
        """Take back one run counted as open under ``status`` (it moved on: settle.py)."""
        left = self.outcomes.get(status, 0) - 1
        if left > 0:
            self.outcomes[status] = left
        else:
            self.outcomes.pop(status, None)
        self.open = max(self.open - 1, 0)

    def merge(self, other: Bucket) -> None:
        for status, count in other.outcomes.items():
            self.outcomes[status] = self.outcomes.get(status, 0) + count
        self.retries += other.retries
        self.open += other.open
        self.duration.merge(other.duration)
        self.wait.merge(other.wait)

    def to_value(self, resolution: Resolution) -> dict[str, Any]:
        return {"scope": self.scope, "key": self.key, "start": self.start, "resolution": resolution,
                "outcomes": self.outcomes, "retries": self.retries, "open": self.open,
                "duration": self.duration.to_json(), "wait": self.wait.to_json()}

    def summary(self, resolution: Resolution) -> dict[str, Any]:
        """What a chart needs of the bucket: a few hundred bytes, where the sketches are a few KB."""
        return {"scope": self.scope, "key": self.key, "start": self.start, "resolution": resolution,
                "outcomes": self.outcomes, "retries": self.retries, "open": self.open,
                "durationMs": quantiles(self.duration), "waitMs": quantiles(self.wait)}

    @classmethod
    def from_value(cls, value: Mapping[str, Any]) -> Bucket:
        outcomes = value.get("outcomes")
        return cls(scope=str(value.get("scope", "")), key=str(value.get("key", "")),
                   start=int(value.get("start") or 0),
                   outcomes={str(k): int(v) for k, v in outcomes.items()} if isinstance(outcomes, dict) else {},
                   retries=int(value.get("retries") or 0), open=int(value.get("open") or 0),
                   duration=Sketch.from_json(value.get("duration")), wait=Sketch.from_json(value.get("wait")))


QUANTILES: Final = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))


def quantiles(sketch: Sketch) -> dict[str, float | None]:
    """p50, p95 and p99 of ``sketch`` in ms (one decimal), None when it is empty."""
    found = sketch.quantiles([q for _, q in QUANTILES])
    return {name: None if v is None else round(v, 1) for (name, _), v in zip(QUANTILES, found, strict=True)}


def run_facts(run: Mapping[str, Any]) -> tuple[str, Any, float | None, float | None]:
    """What a bucket counts of a run: its status, attempts, duration and wait (ms)."""
    status = run.get("status")
    wait = _number(run.get("waitMs"))
    if wait is None:
        wait = _number(run.get("lateMs"))  # a cron or schedule run: how late its slot started
    return (status if isinstance(status, str) and status else "unknown", run.get("attempts"),
            _number(run.get("durationMs")), wait)


def add_run(buckets: dict[tuple[str, str], Bucket], start: int, run: Mapping[str, Any]) -> None:
    """Count ``run`` in each of its (scope, key) buckets starting at ``start``."""
    facts = run_facts(run)
    for scope, key in keys_of_run(run):
        bucket = buckets.get((scope, key))
        if bucket is None:
            bucket = buckets[(scope, key)] = Bucket(scope, key, start)
        bucket.add_run(*facts)

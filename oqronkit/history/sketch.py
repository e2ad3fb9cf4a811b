"""A mergeable quantile sketch: log-bucketed with a fixed relative error (DDSketch's
idea), JSON-serialisable, and merged by adding bucket counts, so minute sketches merge
into hours and hours into days with the same error bound."""

from __future__ import annotations

import math
from typing import Any

#: Relative error of every quantile the sketch answers (2%: a p99 of 1,000 ms reads 980-1,020).
RELATIVE_ERROR = 0.02
_GAMMA = (1 + RELATIVE_ERROR) / (1 - RELATIVE_ERROR)
_LOG_GAMMA = math.log(_GAMMA)


def bucket_index(value: float) -> int:
    """The bucket of a positive value: the i with gamma^(i-1) < value <= gamma^i."""
    return math.ceil(math.log(value) / _LOG_GAMMA)


def bucket_value(index: int) -> float:
    """The value a bucket stands for: within RELATIVE_ERROR of every value in it."""
    return 2 * _GAMMA ** index / (_GAMMA + 1)


class Sketch:
    """Counts of non-negative values (milliseconds) per log bucket; zeros counted apart."""

    __slots__ = ("buckets", "count", "total", "zeros")

    def __init__(self) -> None:
        self.buckets: dict[int, int] = {}
        self.zeros = 0
        self.count = 0
        self.total = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        if value <= 0:
            self.zeros += 1
            return
        index = bucket_index(value)
        self.buckets[index] = self.buckets.get(index, 0) + 1

    def merge(self, other: Sketch) -> None:
        """Add ``other``'s counts to this sketch (bucket-wise sum)."""
        self.count += other.count
        self.total += other.total
        self.zeros += other.zeros
        for index, count in other.buckets.items():
            self.buckets[index] = self.buckets.get(index, 0) + count

    def quantile(self, q: float) -> float | None:
        """The value at quantile ``q`` (0-1), within RELATIVE_ERROR; None when empty."""
        if self.count == 0:
            return None
        rank = q * (self.count - 1)
        seen = self.zeros
        if rank < seen:
            return 0.0
        for index in sorted(self.buckets):
            seen += self.buckets[index]
            if rank < seen:
                return bucket_value(index)
        return bucket_value(max(self.buckets))

    def quantiles(self, qs: list[float]) -> list[float | None]:
        """Several quantiles (ascending ``qs``) in one walk of the buckets."""
        if self.count == 0:
            return [None] * len(qs)
        found: list[float | None] = []
        ordered = sorted(self.buckets.items())
        seen, position = self.zeros, 0
        for q in qs:
            rank = q * (self.count - 1)
            if rank < self.zeros:
                found.append(0.0)
                continue
            while position < len(ordered) and seen + ordered[position][1] <= rank:
                seen += ordered[position][1]
                position += 1
            index = ordered[min(position, len(ordered) - 1)][0]
            found.append(bucket_value(index))
        return found

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def to_json(self) -> dict[str, Any]:
        return {"n": self.count, "sum": round(self.total, 3), "zeros": self.zeros,
                "b": {str(index): count for index, count in self.buckets.items()}}

    @classmethod
    def from_json(cls, value: Any) -> Sketch:
        """A sketch from :meth:`to_json`'s shape; anything malformed reads as empty."""
        sketch = cls()
        if not isinstance(value, dict):
            return sketch
        try:
            sketch.buckets = {int(k): int(v) for k, v in (value.get("b") or {}).items()}
            sketch.zeros = int(value.get("zeros") or 0)
            sketch.count = int(value.get("n") or 0)
            sketch.total = float(value.get("sum") or 0.0)
        except (TypeError, ValueError, AttributeError):
            return cls()
        return sketch

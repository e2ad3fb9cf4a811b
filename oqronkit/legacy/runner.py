"""The runner of the v1 migration: map every row, count, and (with ``apply``) insert.

Inserts are insert-if-absent (:meth:`~oqronkit.DurablePlane.insert_many`), so a re-run
writes nothing new and an interrupted run can simply be started again.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from ..clock import now_ms
from ..codec import encode_value
from ..config import DEFAULT_MAX_RECORD_BYTES
from ..durable import DurablePlane, RecordWrite
from ..errors import InvalidRecord, RecordTooLarge
from .mapping import LegacyRow, V2Write, map_v1_row

logger = logging.getLogger(__name__)

_ScopeKey = tuple[str, str]
ScopeKind = tuple[str, str, str]


@dataclass
class MigrationReport:
    """What a run did (or, for a dry run, would do), per (project, environment, kind)."""

    applied: bool
    rows_read: int = 0
    planned: Counter[ScopeKind] = field(default_factory=Counter)
    written: Counter[ScopeKind] = field(default_factory=Counter)
    present: Counter[ScopeKind] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)

    @property
    def total_planned(self) -> int:
        return sum(self.planned.values())

    @property
    def total_written(self) -> int:
        return sum(self.written.values())

    @property
    def total_present(self) -> int:
        return sum(self.present.values())

    @property
    def total_skipped(self) -> int:
        return sum(self.skipped.values())

    def rows(self) -> list[tuple[str, str, str, int, int, int]]:
        """(project, environment, kind, planned, written, present), sorted, for tables."""
        return [(*key, n, self.written[key], self.present[key]) for key, n in sorted(self.planned.items())]


def migrate_v1(
    rows: Iterable[LegacyRow],
    plane_for: Callable[[str, str], DurablePlane],
    *,
    default_project: str,
    default_environment: str,
    apply: bool = False,
    batch_size: int = 500,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    migrated_at: int | None = None,
) -> MigrationReport:
    """Map every v1 row and, with ``apply``, insert the result.

    A dry run (the default) only counts and never calls ``plane_for``. ``apply`` starts
    each scope's plane once with ``acknowledge_v1_layout=True`` (the point is to run while
    ``oqron_kv`` exists) and inserts with :meth:`DurablePlane.insert_many` in batches of
    ``batch_size`` per scope: rows already present are left alone and counted, so a second
    run writes nothing new. The caller owns (and closes) the planes ``plane_for`` returns.
    """
    if batch_size < 1:
        raise InvalidRecord(f"batch_size must be at least 1, got {batch_size}.")
    at = now_ms() if migrated_at is None else migrated_at
    report = MigrationReport(applied=apply)
    batches = _Batches(report, plane_for, batch_size) if apply else None
    for write in _mapped(rows, report, default_project, default_environment, at, max_record_bytes):
        report.planned[(write.project, write.environment, write.kind)] += 1
        if batches is not None:
            batches.add(write)
    if batches is not None:
        batches.flush_all()
    return report


def _mapped(
    rows: Iterable[LegacyRow], report: MigrationReport, project: str, environment: str,
    at: int, max_record_bytes: int,
) -> Iterator[V2Write]:
    for row in rows:
        report.rows_read += 1
        mapped = map_v1_row(row, default_project=project, default_environment=environment, migrated_at=at)
        if mapped.skipped:
            report.skipped[mapped.skipped] += 1
            continue
        problem = next(filter(None, (_encoding_problem(w, max_record_bytes) for w in mapped.writes)), None)
        if problem:
            # Skip the whole row: half a job (a DLQ entry without its run) is worse than none.
            report.skipped[problem] += 1
            continue
        yield from mapped.writes


def _encoding_problem(write: V2Write, limit: int) -> str | None:
    """Checked up front so one bad record skips its row instead of failing a batch."""
    try:
        encode_value(write.value, limit=limit, what=f"{write.namespace}/{write.id}")
    except RecordTooLarge:
        return "too large for max_record_bytes"
    except InvalidRecord:
        return "value is not JSON-serialisable"
    return None


class _Batches:
    """Per-scope write buffers flushed with insert-if-absent."""

    def __init__(
        self, report: MigrationReport, plane_for: Callable[[str, str], DurablePlane], size: int
    ) -> None:
        self.report = report
        self.plane_for = plane_for
        self.size = size
        self.planes: dict[_ScopeKey, DurablePlane] = {}
        self.pending: dict[_ScopeKey, dict[tuple[str, str], V2Write]] = {}

    def add(self, write: V2Write) -> None:
        scope = (write.project, write.environment)
        buffer = self.pending.setdefault(scope, {})
        key = (write.namespace, write.id)
        if key in buffer:
            # Two v1 rows map to one v2 key (a prefixed and an unprefixed copy): first wins,
            # exactly as it would across batches.
            self.report.present[(*scope, write.kind)] += 1
            return
        buffer[key] = write
        if len(buffer) >= self.size:
            self.flush(scope)

    def flush_all(self) -> None:
        for scope in list(self.pending):
            self.flush(scope)

    def flush(self, scope: _ScopeKey) -> None:
        writes = list(self.pending.pop(scope, {}).values())
        if not writes:
            return
        inserted = self._plane(scope).insert_many(RecordWrite(w.namespace, w.id, w.value) for w in writes)
        for w in writes:
            counter = self.report.written if (w.namespace, w.id) in inserted else self.report.present
            counter[(*scope, w.kind)] += 1
        logger.debug(
            "v1 migration: %s of %s rows inserted for %s/%s", len(inserted), len(writes), *scope,
            extra={"action": "legacy.batch"},
        )

    def _plane(self, scope: _ScopeKey) -> DurablePlane:
        plane = self.planes.get(scope)
        if plane is None:
            plane = self.plane_for(*scope)
            plane.start(acknowledge_v1_layout=True)
            self.planes[scope] = plane
        return plane

"""Whether a queue exists for the board, read across two tables (the ``queue`` control
records of oqron_records, the jobs and dead letters of oqron_jobs): pause and resume
answer 404 for a queue that is nowhere, and a queue record with no job and no dead
letter left is stale, so the definitions page offers to remove it."""

from __future__ import annotations

from django.db.models import BooleanField, Case, Exists, OuterRef, Value, When
from django.db.models.functions import Concat

from oqronboard.definitions.models import Record
from oqronboard.jobs.models import JobRecord
from oqronboard.runs.queries import QUEUE_MODULES, runs_of
from oqronkit.errors import OqronError
from oqronkit.live import live_workers
from oqronkit.namespaces import DLQ_PREFIX, JOB_PREFIX, QUEUE, dlq_namespace, job_namespace

from .base.expressions import JsonText
from .base.scope import BoardScope


def has_record(scope: BoardScope, name: str) -> bool:
    return Record.objects.scoped(scope.project, scope.environment).filter(namespace=QUEUE, id=name).exists()


def holds_jobs(scope: BoardScope, name: str) -> bool:
    """A job (any status) or a dead letter of queue ``name``: a primary-key prefix probe."""
    return JobRecord.objects.scoped(scope.project, scope.environment) \
        .filter(namespace__in=[job_namespace(name), dlq_namespace(name)]).exists()


def queue_known(scope: BoardScope, name: str) -> bool:
    return has_record(scope, name) or holds_jobs(scope, name)


def consumed_queues(scope: BoardScope) -> set[str] | None:
    """The queues a live worker consumes; None when the hot plane cannot say (a queue
    record is then never offered for removal: a live worker may still use it)."""
    try:
        workers = live_workers(scope.engine.hot)
    except OqronError:
        return None
    return {name for worker in workers for name in (worker.get("queues") or {})}


def is_stale(record: Record, consumed: set[str] | None) -> bool:
    """A queue record (annotated by :func:`usage_annotations`) whose queue holds no job and
    no dead letter and which no live worker consumes (``consumed`` from
    :func:`consumed_queues`; None: unknown, so never stale): removable."""
    return record.namespace == QUEUE and not (record.holds_jobs or record.holds_dead) \
        and consumed is not None and record.id not in consumed


def seen_by_runs(scope: BoardScope, name: str) -> bool:
    """A run of queue ``name`` (its jobs may all have completed and left oqron_jobs)."""
    return runs_of(scope).alias(run_name=JsonText("name"), run_module=JsonText("module")) \
        .filter(run_name=name, run_module__in=QUEUE_MODULES).exists()


def queue_seen(scope: BoardScope, name: str) -> bool:
    """Known anywhere: a record, a job or dead letter, a run, or a live consumer."""
    if queue_known(scope, name) or seen_by_runs(scope, name):
        return True
    consumed = consumed_queues(scope)
    return consumed is not None and name in consumed


def usage_annotations(scope: BoardScope) -> dict[str, Case]:
    """For a query over definition records: ``holds_jobs`` and ``holds_dead`` per row,
    each an index probe into oqron_jobs (no extra query) for a ``queue`` record only (the
    others, most of the page's rows, are False without a probe)."""
    jobs = JobRecord.objects.scoped(scope.project, scope.environment)

    def probe(prefix: str) -> Case:
        held = Exists(jobs.filter(namespace=Concat(Value(prefix), OuterRef("id"))))
        return Case(When(namespace=QUEUE, then=held), default=Value(False), output_field=BooleanField())

    return {"holds_jobs": probe(JOB_PREFIX), "holds_dead": probe(DLQ_PREFIX)}

"""Whether a queue exists for the board, read across two tables (the ``queue`` control
records of oqron_records, the jobs and dead letters of oqron_jobs): pause and resume
answer 404 for a queue that is nowhere, and a queue record with no job and no dead
letter left is stale, so the definitions page offers to remove it."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Value
from django.db.models.functions import Concat

from oqronboard.definitions.models import Record
from oqronboard.jobs.models import JobRecord
from oqronkit.namespaces import DLQ_PREFIX, JOB_PREFIX, QUEUE, dlq_namespace, job_namespace

from .base.scope import BoardScope


def has_record(scope: BoardScope, name: str) -> bool:
    return Record.objects.scoped(scope.project, scope.environment).filter(namespace=QUEUE, id=name).exists()


def holds_jobs(scope: BoardScope, name: str) -> bool:
    """A job (any status) or a dead letter of queue ``name``: a primary-key prefix probe."""
    return JobRecord.objects.scoped(scope.project, scope.environment) \
        .filter(namespace__in=[job_namespace(name), dlq_namespace(name)]).exists()


def queue_known(scope: BoardScope, name: str) -> bool:
    return has_record(scope, name) or holds_jobs(scope, name)


def usage_annotations(scope: BoardScope) -> dict[str, Exists]:
    """For a query over ``queue`` records: ``holds_jobs`` and ``holds_dead`` per row,
    each an index probe into oqron_jobs (no extra query)."""
    jobs = JobRecord.objects.scoped(scope.project, scope.environment)
    return {
        "holds_jobs": Exists(jobs.filter(namespace=Concat(Value(JOB_PREFIX), OuterRef("id")))),
        "holds_dead": Exists(jobs.filter(namespace=Concat(Value(DLQ_PREFIX), OuterRef("id")))),
    }

"""``oqron_jobs``: durable work orders (``queue_job:*``) and dead letters (``queue_dlq:*``)."""

from __future__ import annotations

from oqronboard.base.records import DurableManager, DurableRecord, DurableRecordQuerySet
from oqronkit.namespaces import dlq_namespace, job_namespace, queue_of


class JobRecordQuerySet(DurableRecordQuerySet):
    def jobs(self, queue: str | None = None) -> JobRecordQuerySet:
        """Work orders, of one queue when given."""
        qs = self.of_kind("job")
        return qs.in_namespace(job_namespace(queue)) if queue is not None else qs

    def dead_letters(self, queue: str | None = None) -> JobRecordQuerySet:
        """Dead-lettered jobs, of one queue when given."""
        qs = self.of_kind("dlq")
        return qs.in_namespace(dlq_namespace(queue)) if queue is not None else qs

    def with_status(self, *statuses: str) -> JobRecordQuerySet:
        """Jobs whose ``value->>'status'`` is one of ``statuses`` (``waiting``, ``delayed``...)."""
        return self.filter(value__status__in=statuses)


class JobRecord(DurableRecord):
    """One row of ``oqron_jobs`` (read-only; retry or delete jobs through the engine)."""

    objects = DurableManager.from_queryset(JobRecordQuerySet)()

    class Meta(DurableRecord.Meta):
        managed = False
        db_table = "oqron_jobs"
        verbose_name = "job record"
        verbose_name_plural = "job records"

    @property
    def queue(self) -> str:
        """The queue name: the namespace's suffix (``queue_job:emails`` -> ``emails``)."""
        return queue_of(self.namespace) or ""  # never None: oqron_jobs holds only jobs and dead letters

"""``oqron_records``: definitions, control (pause/version) state, webhook endpoints,
circuit breakers, module logs and custom namespaces."""

from __future__ import annotations

from oqronboard.base.records import DurableManager, DurableRecord, DurableRecordQuerySet
from oqronkit.namespaces import module_logs_namespace


class RecordQuerySet(DurableRecordQuerySet):
    def definitions(self) -> RecordQuerySet:
        return self.of_kind("definition")

    def control(self) -> RecordQuerySet:
        return self.of_kind("control")

    def module_logs(self, module: str | None = None) -> RecordQuerySet:
        qs = self.of_kind("log")
        return qs.in_namespace(module_logs_namespace(module)) if module is not None else qs


class Record(DurableRecord):
    """One row of ``oqron_records`` (read-only; pause or edit through the engine)."""

    objects = DurableManager.from_queryset(RecordQuerySet)()

    class Meta(DurableRecord.Meta):
        managed = False
        db_table = "oqron_records"
        verbose_name = "record"
        verbose_name_plural = "records"

    # Not columns: the definitions page's queue usage annotations.
    holds_jobs: bool
    holds_dead: bool

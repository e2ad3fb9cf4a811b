"""``oqron_runs``: run history (``runs``) and the pub/sub message log (``topic_msg:*``)."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from oqronboard.base.records import DurableManager, DurableRecord, DurableRecordQuerySet
from oqronkit.namespaces import topic_msg_namespace


class RunRecordQuerySet(DurableRecordQuerySet):
    def runs(self) -> RunRecordQuerySet:
        return self.of_kind("run")

    def messages(self, topic: str | None = None) -> RunRecordQuerySet:
        """Retained messages, of one topic when given."""
        qs = self.of_kind("message")
        return qs.in_namespace(topic_msg_namespace(topic)) if topic is not None else qs

    def with_status(self, *statuses: str) -> RunRecordQuerySet:
        """Runs whose ``value->>'status'`` is one of ``statuses`` (an indexed field)."""
        return self.filter(value__status__in=statuses)

    def named(self, name: str) -> RunRecordQuerySet:
        return self.filter(value__name=name)

    def for_module(self, module: str) -> RunRecordQuerySet:
        return self.filter(value__module=module)

    def newest_started_first(self) -> RunRecordQuerySet:
        """Order by the run's ``startedAt`` (epoch ms), newest first, as the spec's SQL."""
        started = Cast(KT("value__startedAt"), models.BigIntegerField())
        return self.annotate(started_at=started).order_by(models.F("started_at").desc(nulls_last=True), "-id")


class RunRecord(DurableRecord):
    """One row of ``oqron_runs`` (read-only; runs are written by the engine)."""

    objects = DurableManager.from_queryset(RunRecordQuerySet)()

    class Meta(DurableRecord.Meta):
        managed = False
        db_table = "oqron_runs"
        verbose_name = "run record"
        verbose_name_plural = "run records"

    @property
    def status(self) -> Any:
        return self.value.get("status")

    @property
    def name(self) -> Any:
        return self.value.get("name")

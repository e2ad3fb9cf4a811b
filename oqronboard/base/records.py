"""The shape every durable table shares, as a read-only abstract Django model.

``runs``, ``jobs`` and ``definitions`` each subclass :class:`DurableRecord` with
``managed = False`` and their table. The board reads these rows with the ORM and
changes state only through the engine's API (habit 10): every ORM write path raises
:class:`ReadOnlyModelError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, NoReturn, Self

from django.db import models
from django.db.models import Q

from oqronkit import OqronError
from oqronkit.codec import shallow_json
from oqronkit.namespaces import sole_namespace_of_kind

_ADVICE = (
    "OqronBoard's {what} rows belong to the engine: read them with the ORM, change them "
    "through the engine's API (oqronkit.contrib.django.engine.get_durable(), or the queue/cron/topic "
    "objects), never with save(), delete(), update() or bulk writes."
)


class ReadOnlyModelError(OqronError, RuntimeError):
    """A write was attempted through a read-only unmanaged model."""


def _refuse(model: type[models.Model], operation: str) -> NoReturn:
    raise ReadOnlyModelError(
        f"{model.__name__}.{operation}() is not allowed. "
        + _ADVICE.format(what=model._meta.db_table)
    )


class DurableRecordQuerySet(models.QuerySet):
    """Read-only queries over one durable table, with the filters the pages need."""

    # -- scoping and kinds -------------------------------------------------------------

    def scoped(self, project: str, environment: str) -> Self:
        """Rows of one (project, environment): every board query starts here."""
        return self.filter(project=project, environment=environment)

    def in_namespace(self, namespace: str) -> Self:
        return self.filter(namespace=namespace)

    def of_kind(self, *kinds: str) -> Self:
        """Rows stamped with any of ``kinds`` (``"job"``, ``"dlq"``, ``"run"``...)."""
        qs = self.filter(record_kind__in=kinds)
        namespace = sole_namespace_of_kind(kinds[0]) if len(kinds) == 1 else None
        # Runs are left out of oqron_runs' kind index; their one namespace is indexed.
        return qs.filter(namespace=namespace) if namespace is not None else qs

    def live(self, at_ms: int | None = None) -> Self:
        """Rows not yet expired at ``at_ms`` (default: now); pruning may lag behind."""
        at = time.time_ns() // 1_000_000 if at_ms is None else at_ms
        return self.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=at))

    def namespaces(self) -> list[str]:
        """The distinct namespaces present (e.g. every queue with jobs)."""
        return list(self.order_by("namespace").values_list("namespace", flat=True).distinct())

    def newest_first(self) -> Self:
        return self.order_by("-inserted_at", "-id")

    # -- refused writes ----------------------------------------------------------------

    def update(self, **kwargs: Any) -> NoReturn:
        _refuse(self.model, "objects.update")

    def _update(self, values: Any) -> NoReturn:
        _refuse(self.model, "objects._update")

    def delete(self) -> NoReturn:
        _refuse(self.model, "objects.delete")

    def _raw_delete(self, using: Any) -> NoReturn:
        _refuse(self.model, "objects._raw_delete")

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self.model, "objects.bulk_create")

    def bulk_update(self, objs: Any, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self.model, "objects.bulk_update")

    def create(self, **kwargs: Any) -> NoReturn:
        _refuse(self.model, "objects.create")

    def get_or_create(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self.model, "objects.get_or_create")

    def update_or_create(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self.model, "objects.update_or_create")


def durable_alias() -> str:
    """The alias of the database holding the durable tables: the engine's,
    ``OQRON["DATABASE_ALIAS"]`` (``default`` unless set)."""
    from oqronkit.contrib.django.engine import database_alias

    return database_alias()


# Chooses the alias this request reads the durable tables from (the read replica or the
# primary); set per request by oqronboard.base.replica, called on the first read only.
READ_ROUTE: ContextVar[Callable[[], str] | None] = ContextVar("oqron_read_route", default=None)


def read_alias() -> str:
    """Where the current request reads the durable tables: the read replica or :func:`durable_alias`."""
    route = READ_ROUTE.get()
    return durable_alias() if route is None else route()


class DurableManager(models.Manager):
    """Reads go to :func:`read_alias` (``.using()`` still overrides it), so the
    board's views and the admin read the engine's tables wherever they live, the read
    replica included (``oqronboard.base.replica``'s router agrees for any other read)."""

    def get_queryset(self) -> models.QuerySet:
        queryset = super().get_queryset()
        return queryset if self._db else queryset.using(read_alias())


# Deeper than this, a stored value is read with its deeper parts replaced by a marker.
READ_DEPTH = 64


class RecordValueField(models.JSONField):
    """The ``value`` column: a JSONField that still reads a row nested past what
    Python's decoder recurses through (a row written by hand or before the engine's
    depth limit; the stdlib stops near 1,000 levels on 3.12), shallowed to
    :data:`READ_DEPTH` levels instead of failing the page."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        try:
            return super().from_db_value(value, expression, connection)
        except RecursionError:
            if not isinstance(value, str):
                raise
            return super().from_db_value(shallow_json(value, READ_DEPTH), expression, connection)

    def deconstruct(self) -> Any:
        name, _path, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs  # the same column to migrations


class DurableRecord(models.Model):
    """One row of a durable table: ``(project, environment, namespace, id)`` is the
    key, ``value`` the engine's JSON record with the spec's camelCase keys. Each table's
    model declares ``objects``, a :class:`DurableManager` of its own queryset."""

    pk = models.CompositePrimaryKey("project", "environment", "namespace", "id")
    project = models.TextField()
    environment = models.TextField()
    namespace = models.TextField()
    record_kind = models.TextField()
    id = models.TextField()
    value = RecordValueField()
    inserted_at = models.BigIntegerField(help_text="Epoch milliseconds of the first write.")
    expires_at = models.BigIntegerField(null=True, blank=True, help_text="Epoch milliseconds; null: kept.")

    class Meta:
        abstract = True
        managed = False
        # One app however the board's packages are laid out: never a host's "jobs" or "runs".
        app_label = "oqronboard"

    def __str__(self) -> str:
        return f"{self.namespace}/{self.id}"

    def save(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(type(self), "save")

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(type(self), "delete")

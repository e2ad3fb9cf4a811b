"""Read-only admin pages for the unmanaged durable models, scale-safe, with actions that
call the engine.

- Nothing is editable: no add, change or delete permission for anyone. Django's admin
  has no change view for composite primary keys, so rows are not links (the board's
  own pages show a record in full).
- Rows are those of the board's current project and environment (the switcher's
  session value, when the user may see it: :func:`oqronboard.base.roles.current_scope`),
  like every board page; a user who may see none gets 403.
- No full count: ``show_full_result_count = False`` and a paginator that counts at
  most ``COUNT_CAP`` rows. The list filters are fixed choices or small lookups (never a
  ``SELECT DISTINCT`` over a big table), and the search is an exact id match.
- Actions (retry or delete dead letters, pause or resume queues) call the engine's
  queue API, are audited, and declare ``allowed_permissions = ("operate",)``: offered
  only to a user who may act in the current scope (its grants, production's permission).
- Django's action form posts ``str(obj.pk)``, which a composite key cannot be filtered
  back from; the checkbox carries ``[namespace, id]`` as JSON instead, decoded in
  :meth:`ReadOnlyRecordAdmin.response_action`.
"""

from __future__ import annotations

import json
from typing import Any, cast

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ImproperlyConfigured
from django.core.paginator import Paginator
from django.db import models
from django.db.models import Q, QuerySet
from django.forms import CheckboxInput
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.functional import cached_property
from django.utils.safestring import SafeString

from oqronboard.definitions.models import Record
from oqronboard.definitions.queries import queue_controls
from oqronboard.jobs.models import JobRecord
from oqronboard.jobs.queries import dlq_depths
from oqronboard.runs.models import RunRecord
from oqronkit.namespaces import AUDIT, QUEUE, RUNS, TOPIC, dlq_namespace, job_namespace, queue_of, topic_msg_namespace

from . import admin_grants
from .base.audit import ACTION_CAP, Action, by_queue
from .base.expressions import JsonText
from .base.records import DurableRecord, DurableRecordQuerySet
from .base.roles import NoScopeGranted, current_scope, operate_refusal
from .base.scope import BoardScope

COUNT_CAP = 10_000


class CappedCountPaginator(Paginator):
    """Counts at most ``COUNT_CAP`` rows (``SELECT count(*) FROM (... LIMIT n)``), so
    a changelist over millions of runs never runs an unbounded ``COUNT(*)``."""

    object_list: QuerySet  # the admin pages a queryset

    @cached_property
    def count(self) -> int:
        return self.object_list.order_by()[:COUNT_CAP].count()


class KindFilter(admin.SimpleListFilter):
    """Record kind, from the fixed kinds the table can hold."""

    title = "record kind"
    parameter_name = "record_kind__exact"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(kind, kind) for kind in model_admin.record_kinds]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        kind = self.value()
        return cast(DurableRecordQuerySet, queryset).of_kind(kind) if kind else queryset


class NamespaceFilter(admin.SimpleListFilter):
    """Namespace, from a small lookup (queues, topics, definitions), never a DISTINCT
    over the table."""

    title = "namespace"
    parameter_name = "namespace"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(ns, ns) for ns in model_admin.namespace_choices(current_scope(request))]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(namespace=self.value()) if self.value() else queryset


class StatusFilter(admin.SimpleListFilter):
    """``value->>'status'`` (the indexed run field), from fixed choices."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(s, s) for s in model_admin.statuses]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if not self.value():
            return queryset
        return queryset.alias(f_status=JsonText("status")).filter(f_status=self.value())


def _encode_key(obj: DurableRecord) -> str:
    return json.dumps([obj.namespace, obj.id], separators=(",", ":"))


def _decode_key(raw: str) -> tuple[str, str] | None:
    try:
        namespace, row_id = json.loads(raw)
    except (ValueError, TypeError):
        return None
    if not isinstance(namespace, str) or not isinstance(row_id, str):
        return None
    return namespace, row_id


class ReadOnlyRecordAdmin(admin.ModelAdmin):
    """A searchable, filterable list of one durable table; nothing editable."""

    list_display = ("namespace", "id", "record_kind", "status", "inserted")
    list_filter = (KindFilter, NamespaceFilter, StatusFilter)
    search_fields = ("id",)
    search_help_text = "An exact record id."
    # Django's admin has no change view for composite primary keys, so rows are not
    # links; the board's own pages show a record in full.
    list_display_links = None
    show_full_result_count = False
    paginator = CappedCountPaginator
    list_per_page = 50
    record_kinds: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()

    # -- read only -----------------------------------------------------------------------

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_operate_permission(self, request: HttpRequest) -> bool:
        """``allowed_permissions = ("operate",)`` on every action that changes state: the
        board's own rule for the current scope."""
        try:
            return operate_refusal(request, current_scope(request)) is None
        except NoScopeGranted:
            return False

    # -- the list --------------------------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        scope = current_scope(request)
        # The list shows the status, not the (possibly large) JSON value.
        return (cast(DurableRecordQuerySet, super().get_queryset(request)).scoped(scope.project, scope.environment)
                .annotate(status_text=JsonText("status")).defer("value"))

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> tuple[QuerySet, bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        namespaces = self.search_namespaces(current_scope(request))
        if namespaces is not None:
            queryset = queryset.filter(namespace__in=namespaces)
        return queryset.filter(id=term), False

    def search_namespaces(self, scope: BoardScope) -> list[str] | None:
        """Namespaces an id search looks in (so it is a primary-key read), or None."""
        return None

    def namespace_choices(self, scope: BoardScope) -> list[str]:
        return []

    @admin.display(description="status")
    def status(self, obj: models.Model) -> str:
        return getattr(obj, "status_text", None) or ""

    @admin.display(description="inserted", ordering="inserted_at")
    def inserted(self, obj: DurableRecord) -> str:
        from .templatetags.board import ms_time

        return ms_time(obj.inserted_at)

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        """None ("does not exist") for a crafted key: Django parses a composite key as
        JSON and raises TypeError on a bare number such as ``NaN``."""
        try:
            return super().get_object(request, object_id, from_field)
        except (TypeError, ValueError):
            return None

    # -- composite keys in actions ---------------------------------------------------------

    def action_checkbox(self, obj: DurableRecord) -> SafeString:
        checkbox = CheckboxInput({"class": "action-select", "aria-label": f"Select {obj}"}, lambda value: False)
        return checkbox.render(helpers.ACTION_CHECKBOX_NAME, _encode_key(obj))

    def response_action(self, request: HttpRequest, queryset: QuerySet, *args: Any, **kwargs: Any) -> Any:
        selected = request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)
        if selected and request.POST.get("select_across") != "1":
            keys = [key for key in map(_decode_key, selected) if key is not None][:ACTION_CAP]
            if keys:
                match = Q()
                for namespace, row_id in keys:
                    match |= Q(namespace=namespace, id=row_id)
                queryset = queryset.filter(match)
            else:
                queryset = queryset.none()
            # Selection applied here: tell Django's handler not to filter on pk itself.
            post = request.POST.copy()
            post["select_across"] = "1"
            request.POST = post  # type: ignore[assignment]  # django-stubs: POST may be a mutable copy
        return super().response_action(request, queryset, *args, **kwargs)


def _targets(queryset: QuerySet, kind: str) -> list[tuple[str, str]]:
    rows = queryset.filter(record_kind=kind).order_by().values_list("namespace", "id")[:ACTION_CAP]
    return [(queue_of(namespace) or "", row_id) for namespace, row_id in rows]


class JobRecordAdmin(ReadOnlyRecordAdmin):
    record_kinds = ("job", "dlq")
    statuses = ("waiting", "delayed", "active", "waiting-dependencies", "blocked", "dead")
    actions = ("retry_dead", "delete_dead")

    def search_namespaces(self, scope: BoardScope) -> list[str]:
        return [build(q) for q in _queues(scope) for build in (job_namespace, dlq_namespace)]

    def namespace_choices(self, scope: BoardScope) -> list[str]:
        return self.search_namespaces(scope)

    @admin.action(description="Retry the selected dead letters", permissions=["operate"])
    def retry_dead(self, request: HttpRequest, queryset: QuerySet) -> None:
        scope = current_scope(request)
        pairs = _targets(queryset, "dlq")
        retried = sum(len(scope.queue(q).retry_many(ids)) for q, ids in by_queue(pairs).items())
        message = f"Retried {retried} of {len(pairs)} dead letter(s)."
        Action(scope, request.user.get_username(), "retry", source="admin", targets=pairs).save(
            ok=retried > 0, result=message)
        self.message_user(request, message, messages.SUCCESS if retried else messages.WARNING)

    @admin.action(description="Delete the selected dead letters…", permissions=["operate"])
    def delete_dead(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        scope = current_scope(request)
        pairs = _targets(queryset, "dlq")
        if request.POST.get("confirmed") != "yes":
            return TemplateResponse(request, "oqronboard/admin/confirm_delete.html", {
                **self.admin_site.each_context(request), "title": "Delete dead letters?", "pairs": pairs[:20],
                "count": len(pairs), "keys": [json.dumps([dlq_namespace(q), i]) for q, i in pairs],
                "action": "delete_dead", "opts": self.model._meta,
            })
        deleted = sum(scope.queue(q).delete_dead(ids) for q, ids in by_queue(pairs).items())
        message = f"Deleted {deleted} of {len(pairs)} dead letter(s)."
        Action(scope, request.user.get_username(), "delete", source="admin", targets=pairs).save(
            ok=deleted > 0, result=message)
        self.message_user(request, message, messages.SUCCESS if deleted else messages.WARNING)
        return None


class RunRecordAdmin(ReadOnlyRecordAdmin):
    record_kinds = ("run", "message")
    statuses = ("queued", "running", "completed", "failed", "cancelled", "held")

    def search_namespaces(self, scope: BoardScope) -> list[str]:
        return [RUNS, *self.topic_namespaces(scope)]

    def namespace_choices(self, scope: BoardScope) -> list[str]:
        return self.search_namespaces(scope)

    @staticmethod
    def topic_namespaces(scope: BoardScope) -> list[str]:
        topics = Record.objects.scoped(scope.project, scope.environment).filter(namespace=TOPIC)
        return [topic_msg_namespace(t) for t in topics.values_list("id", flat=True)[:200]]


class RecordAdmin(ReadOnlyRecordAdmin):
    record_kinds = ("definition", "control", "log", "state", "operation", "record")
    actions = ("pause_queues", "resume_queues")

    def namespace_choices(self, scope: BoardScope) -> list[str]:
        small = Record.objects.scoped(scope.project, scope.environment).of_kind("definition", "control", "state")
        return sorted({*small.values_list("namespace", flat=True).distinct()[:200], AUDIT})

    def _set_paused(self, request: HttpRequest, queryset: QuerySet, paused: bool) -> None:
        scope = current_scope(request)
        names = list(queryset.filter(namespace=QUEUE).order_by().values_list("id", flat=True)[:ACTION_CAP])
        for name in names:
            queue = scope.queue(name)
            queue.pause() if paused else queue.resume()
        verb = "Paused" if paused else "Resumed"
        message = f"{verb} {len(names)} queue(s)." if names else "Select queue control records (namespace queue)."
        Action(scope, request.user.get_username(), "pause" if paused else "resume", source="admin",
               extra={"target": ", ".join(f"queue {n}" for n in names)}).save(ok=bool(names), result=message)
        self.message_user(request, message, messages.SUCCESS if names else messages.WARNING)

    @admin.action(description="Pause the selected queues", permissions=["operate"])
    def pause_queues(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._set_paused(request, queryset, True)

    @admin.action(description="Resume the selected queues", permissions=["operate"])
    def resume_queues(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._set_paused(request, queryset, False)


def _queues(scope: BoardScope) -> list[str]:
    return sorted(set(queue_controls(scope)) | set(dlq_depths(scope)))


def register_read_only(
    model: type[models.Model],
    admin_class: type[admin.ModelAdmin] = ReadOnlyRecordAdmin,
    site: admin.AdminSite | None = None,
) -> None:
    """Register ``model`` with ``admin_class`` on ``site`` (default: the admin site).

    Django 6.1's ``AdminSite.register`` refuses any model with a composite primary key,
    because the change view cannot address one. The changelist works (list, search,
    filters, actions), and ``ReadOnlyRecordAdmin`` links to no change view, so the model
    is installed in the registry directly. tests/board/test_admin.py guards this: if a
    Django release changes the registry, that test fails, not a user's page.
    """
    site = site or admin.site
    try:
        site.register(model, admin_class)
    except ImproperlyConfigured:
        if not model._meta.is_composite_pk or admin_class.list_display_links is not None:
            raise
        site._registry[model] = admin_class(model, site)


# The admin reads all three tables, so it registers their models here, above the apps.
register_read_only(RunRecord, RunRecordAdmin)
register_read_only(JobRecord, JobRecordAdmin)
register_read_only(Record, RecordAdmin)
# Where an administrator grants scopes (oqronboard/admin_grants.py).
admin_grants.register(admin.site)

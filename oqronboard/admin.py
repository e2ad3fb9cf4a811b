"""Read-only admin pages for the unmanaged durable models.

The admin never writes rows: no add, change or delete permission for anyone. Actions
that change state (retry, pause, replay) will call the engine's API and declare
``allowed_permissions`` explicitly (issue #4).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.http import HttpRequest


class ReadOnlyRecordAdmin(admin.ModelAdmin):
    """A searchable, filterable list of one durable table; nothing editable."""

    list_display = ("namespace", "id", "record_kind")
    list_filter = ("record_kind",)
    search_fields = ("id",)
    # Django's admin has no change view for composite primary keys, so rows are not
    # links; the board's own pages show a record in full.
    list_display_links = None
    # COUNT(*) over run history is what the board budget forbids per request.
    show_full_result_count = False
    list_per_page = 50

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def register_read_only(
    model: type[models.Model],
    admin_class: type[admin.ModelAdmin] = ReadOnlyRecordAdmin,
    site: admin.AdminSite | None = None,
) -> None:
    """Register ``model`` with ``admin_class`` on ``site`` (default: the admin site).

    Django 6.1's ``AdminSite.register`` refuses any model with a composite primary key,
    because the change view cannot address one. The changelist works (list, search,
    filters), and ``ReadOnlyRecordAdmin`` links to no change view, so the model is
    installed in the registry directly. tests/board/test_admin.py guards this: if a
    Django release changes the registry, that test fails, not a user's page.
    """
    site = site or admin.site
    try:
        site.register(model, admin_class)
    except ImproperlyConfigured:
        if not model._meta.is_composite_pk or admin_class.list_display_links is not None:
            raise
        site._registry[model] = admin_class(model, site)

"""The admin of scope grants (:class:`oqronboard.base.grants.ScopeGrant`): where a host's
administrators open projects and environments to users and groups. Registered by
:mod:`oqronboard.admin`; Django's own model permissions (``view_scopegrant``,
``add_scopegrant``...) say who may manage them."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.http import HttpRequest

from .base.grants import ScopeGrant


class ScopeGrantAdmin(admin.ModelAdmin):
    list_display = ("__str__", "user", "group", "project", "environment", "can_operate")
    list_filter = ("can_operate", "group")
    # The user by id (a host may hold many users); groups are few, so a select.
    raw_id_fields = ("user",)
    list_select_related = ("user", "group")
    fields = ("user", "group", "project", "environment", "can_operate")

    def get_search_fields(self, request: HttpRequest) -> tuple[str, ...]:
        return ("project", "environment", f"user__{get_user_model().USERNAME_FIELD}", "group__name")


def register(site: admin.AdminSite) -> None:
    site.register(ScopeGrant, ScopeGrantAdmin)

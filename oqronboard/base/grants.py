"""Scope grants: which projects and environments a user or a group may see on the board,
and where it may act. The board's own table (``oqronboard_scopegrant``), managed by a
host's admin; :mod:`oqronboard.base.roles` reads it.

A grant names one holder (a user or a group, never both), a project and an environment
(each a name or ``*``), and ``can_operate``: seeing is granted by any grant, acting only
by one with ``can_operate`` and only to holders of ``oqronboard.operate``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from .scope import ANY, PATTERN_PART, ScopePattern

_part = RegexValidator(PATTERN_PART, "A project or environment name (letters, digits, '.', '_', '-'), or * for any.")


class ScopeGrantQuerySet(models.QuerySet):
    def held_by(self, user: Any) -> ScopeGrantQuerySet:
        """Grants of ``user`` and of its groups (one query, the groups a subquery)."""
        holders = Q(user_id=user.pk)
        groups = getattr(user, "groups", None)  # a custom user model may have no groups
        if groups is not None:
            holders |= Q(group__in=groups.all())
        return self.filter(holders)


class ScopeGrant(models.Model):
    """A user or a group may see a (project, environment), and act there if ``can_operate``."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True,
                             related_name="oqron_scope_grants")
    group = models.ForeignKey("auth.Group", on_delete=models.CASCADE, null=True, blank=True,
                              related_name="oqron_scope_grants")
    project = models.CharField(max_length=100, default=ANY, validators=[_part],
                               help_text="A project name, or * for every project.")
    environment = models.CharField(max_length=100, default=ANY, validators=[_part],
                                   help_text="An environment name, or * for every environment.")
    can_operate = models.BooleanField(
        default=False, help_text="Also act there (retry, pause, delete...): only for holders of "
                                 "oqronboard.operate, and in a production environment of "
                                 "oqronboard.operate_production too.")

    objects = ScopeGrantQuerySet.as_manager()

    class Meta:
        verbose_name = "scope grant"
        ordering = ("project", "environment")
        constraints = [
            models.CheckConstraint(condition=Q(user__isnull=False, group__isnull=True)
                                   | Q(user__isnull=True, group__isnull=False),
                                   name="oqron_scopegrant_one_holder",
                                   violation_error_message="A grant is held by a user or by a group: pick one."),
            models.UniqueConstraint(fields=["user", "project", "environment"], condition=Q(user__isnull=False),
                                    name="oqron_scopegrant_user_scope"),
            models.UniqueConstraint(fields=["group", "project", "environment"], condition=Q(group__isnull=False),
                                    name="oqron_scopegrant_group_scope"),
        ]

    def __str__(self) -> str:
        holder = f"user {self.user}" if self.user_id else f"group {self.group}"
        return f"{holder}: {self.project}/{self.environment}{' (operate)' if self.can_operate else ''}"

    def clean(self) -> None:
        if bool(self.user_id) == bool(self.group_id):
            raise ValidationError("A grant is held by a user or by a group: pick one.")

    @property
    def pattern(self) -> ScopePattern:
        return ScopePattern(self.project, self.environment)

"""The board's roles, as Django permissions.

Viewers are any logged-in user. Operators hold ``oqronboard.operate``: the only
permission that lets a request change state (retry, cancel, promote, delete, pause,
resume), on the board's pages and in the admin's actions alike. ``manage.py migrate``
creates a group named ``operators`` holding it (:func:`ensure_operators_group`); add users to
that group, or grant the permission directly.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from .base.roles import OPERATE_PERMISSION, OPERATORS_GROUP


class Board(models.Model):
    """No table: a model only so the ``operate`` permission has a content type."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [("operate", "Can operate the board: retry, cancel, promote, delete, pause, resume"),
                       ("view_metrics", "Can scrape the board's Prometheus metrics at /metrics")]
        verbose_name = "board"


def ensure_operators_group(using: str = "default", **kwargs: Any) -> None:
    """Create the ``operators`` group holding ``oqronboard.operate`` (post_migrate).

    The permission is created here too, so the order of post_migrate receivers does
    not matter."""
    from django.contrib.auth.models import Group, Permission
    from django.contrib.contenttypes.models import ContentType

    content_type = ContentType.objects.db_manager(using).get_for_model(Board, for_concrete_model=False)
    codename = OPERATE_PERMISSION.split(".", 1)[1]
    permission, _ = Permission.objects.using(using).get_or_create(
        content_type=content_type, codename=codename,
        defaults={"name": dict(Board._meta.permissions)[codename]},
    )
    group, _ = Group.objects.using(using).get_or_create(name=OPERATORS_GROUP)
    group.permissions.add(permission)

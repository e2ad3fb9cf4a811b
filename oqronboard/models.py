"""The board's models: its roles as Django permissions, its scope grants, and the
read-only models of the engine's three tables (defined in ``runs``, ``jobs`` and
``definitions``, registered here under the app label ``oqronboard``, so they never clash
with a host's own ``jobs`` app).

Viewers hold ``oqronboard.view_board``: every page and the JSON API's reads. Operators
also hold ``oqronboard.operate``: the only permission that lets a request change state
(retry, cancel, promote, delete, pause, resume), on the board's pages and in the admin's
actions alike; in a production environment (``OQRON_PRODUCTION_ENVIRONMENTS``) they also
need ``oqronboard.operate_production``. Which projects and environments each may see,
and act in, is a :class:`ScopeGrant` (the board's one table). Superusers hold all of it.
Where ``OQRON_BOARD_GROUPS`` is on (the standalone project), ``migrate`` creates the
groups ``viewers``, ``operators`` and ``production-operators``
(:func:`ensure_board_groups`); a host grants the permissions its own way.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from .base.grants import ScopeGrant
from .base.roles import (
    METRICS_PERMISSION,
    OPERATE_PERMISSION,
    OPERATE_PRODUCTION_PERMISSION,
    OPERATORS_GROUP,
    PRODUCTION_OPERATORS_GROUP,
    VIEW_PERMISSION,
    VIEWERS_GROUP,
)
from .definitions.models import Record
from .jobs.models import JobRecord
from .runs.models import RunRecord

__all__ = ["Board", "JobRecord", "Record", "RunRecord", "ScopeGrant", "ensure_board_groups"]


class Board(models.Model):
    """No table: a model only so the board's permissions have a content type."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [("operate", "Can operate the board: retry, cancel, promote, delete, pause, resume"),
                       ("view_metrics", "Can scrape the board's Prometheus metrics at /metrics"),
                       ("view_board", "Can view the board's pages and read its JSON API"),
                       ("operate_production", "Can operate the board in production environments "
                                              "(OQRON_PRODUCTION_ENVIRONMENTS), besides operate")]
        verbose_name = "board"


def ensure_board_groups(using: str = "default", **kwargs: Any) -> None:
    """Create the groups ``viewers`` (``view_board``), ``operators`` (``view_board``,
    ``operate`` and ``view_metrics``) and ``production-operators`` (those and
    ``operate_production``) with their permissions (post_migrate, where
    ``OQRON_BOARD_GROUPS`` is on). The permissions are created here too, so the order of
    post_migrate receivers does not matter. Scopes other than the configured one are
    granted apart (:class:`ScopeGrant`)."""
    from django.contrib.auth.models import Group

    view, operate, metrics, production = (_permission(name, using) for name in (
        VIEW_PERMISSION, OPERATE_PERMISSION, METRICS_PERMISSION, OPERATE_PRODUCTION_PERMISSION))
    Group.objects.using(using).get_or_create(name=VIEWERS_GROUP)[0].permissions.add(view)
    Group.objects.using(using).get_or_create(name=OPERATORS_GROUP)[0].permissions.add(view, operate, metrics)
    Group.objects.using(using).get_or_create(name=PRODUCTION_OPERATORS_GROUP)[0].permissions.add(
        view, operate, metrics, production)


def _permission(name: str, using: str) -> Any:
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType

    content_type = ContentType.objects.db_manager(using).get_for_model(Board, for_concrete_model=False)
    codename = name.split(".", 1)[1]
    return Permission.objects.using(using).get_or_create(
        content_type=content_type, codename=codename, defaults={"name": dict(Board._meta.permissions)[codename]},
    )[0]

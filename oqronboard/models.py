"""The board's roles, as Django permissions.

Viewers are any logged-in user. Operators hold ``oqronboard.operate``: the only
permission that lets a request change state (retry, cancel, promote, delete, pause,
resume), on the board's pages and in the admin's actions alike. ``manage.py migrate``
creates a group named ``operators`` holding it (:mod:`oqronboard.roles`); add users to
that group, or grant the permission directly.
"""

from __future__ import annotations

from django.db import models

OPERATE_PERMISSION = "oqronboard.operate"
OPERATORS_GROUP = "operators"


class Board(models.Model):
    """No table: a model only so the ``operate`` permission has a content type."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [("operate", "Can operate the board: retry, cancel, promote, delete, pause, resume")]
        verbose_name = "board"

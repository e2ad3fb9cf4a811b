"""The board's app: its pages, the read-only models of the engine's tables, its roles,
its checks and its templates' and static files' package home."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class OqronBoardConfig(AppConfig):
    name = "oqronboard"
    verbose_name = "OqronBoard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from oqronkit.contrib.django.signals import scope_changed

        from . import checks  # noqa: F401  (registered on import)
        from .base import replica  # noqa: F401  (its check)
        from .base.shared import refresh_scope

        scope_changed.connect(refresh_scope, dispatch_uid="oqronboard.refresh_scope")
        post_migrate.connect(_board_groups, sender=self, dispatch_uid="oqronboard.board_groups")


def _board_groups(using: str = "default", **kwargs: Any) -> None:
    from oqronkit.contrib.django.conf import setting

    from .models import ensure_board_groups

    if setting("OQRON_BOARD_GROUPS", False, lambda raw: raw.lower() in ("1", "true", "yes", "on")):
        ensure_board_groups(using=using)

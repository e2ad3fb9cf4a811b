"""The project package is also an app: it owns the system checks, management
commands, the board's roles and the board shell's templates."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class OqronBoardConfig(AppConfig):
    name = "oqronboard"
    verbose_name = "OqronBoard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported for its side effect: registering the oqron.* system checks.
        from . import checks, engine, metrics, signals  # noqa: F401
        from .base import replica  # noqa: F401

        engine.connect_signals()
        signals.connect()  # the engine's lifecycle events as Django signals
        post_migrate.connect(_operators_group, sender=self, dispatch_uid="oqronboard.operators_group")


def _operators_group(using: str = "default", **kwargs: Any) -> None:
    from .models import ensure_operators_group

    ensure_operators_group(using=using)

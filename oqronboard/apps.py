"""The project package is also an app: it owns the system checks, management
commands and the board shell's templates."""

from __future__ import annotations

from django.apps import AppConfig


class OqronBoardConfig(AppConfig):
    name = "oqronboard"
    verbose_name = "OqronBoard"

    def ready(self) -> None:
        # Imported for its side effect: registering the oqron.* system checks.
        from . import checks, engine  # noqa: F401

        engine.connect_signals()

"""The integration's app: configures the engine from settings before any user code runs."""

from __future__ import annotations

from django.apps import AppConfig


class OqronKitConfig(AppConfig):
    name = "oqronkit.contrib.django"
    label = "oqronkit"
    verbose_name = "OqronKit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks, engine, signals  # noqa: F401  (checks: registered on import)

        # From here on oqronkit's default engine is the one OQRON configures (or a clear
        # error naming the setting), never one built from the environment.
        engine.install()
        signals.connect()  # the engine's lifecycle events as Django signals

from __future__ import annotations

from django.apps import AppConfig


class WorkloadConfig(AppConfig):
    """Installed only by ``tests/browser/live_settings.py`` (the live board's settings)."""

    name = "tests.browser.workload"
    label = "browser_workload"
    default_auto_field = "django.db.models.BigAutoField"

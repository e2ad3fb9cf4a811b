from __future__ import annotations

from django.apps import AppConfig


class DefinitionsConfig(AppConfig):
    name = "definitions"
    verbose_name = "Definitions"

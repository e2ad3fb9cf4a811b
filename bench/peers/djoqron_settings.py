"""The board project's settings with ``TASKS`` on our backend, for the ``django-tasks-oqron``
system of ``bench/throughput.py``; the engine reads the harness's ``OQRON_*`` variables."""

from __future__ import annotations

import os

from oqronboard.settings import *  # noqa: F403

TASKS = {"default": {"BACKEND": "oqronkit.contrib.django.tasks.OqronBackend", "QUEUES": ["default"]}}
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"},
           # The board's production default (oqronboard/settings.py): without DEBUG, Django's
           # task receivers' INFO records, which no default handler keeps, are not built.
           "loggers": {"django.tasks": {"level": os.environ.get("BENCH_DJANGO_TASKS_LOG", "WARNING")}}}
# As bench/peers/djtasks_settings.py (the django-tasks-db peer): no DEBUG.
# BENCH_DJANGO_TASKS_LOG=INFO measures with those two INFO records per task.
DEBUG = False

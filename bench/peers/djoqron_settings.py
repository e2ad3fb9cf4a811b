"""The board project's settings with ``TASKS`` on our backend, for the ``django-tasks-oqron``
system of ``bench/throughput.py``; the engine reads the harness's ``OQRON_*`` variables."""

from __future__ import annotations

import os

from oqronboard.settings import *  # noqa: F403

TASKS = {"default": {"BACKEND": "oqronboard.tasks.OqronBackend", "QUEUES": ["default"]}}
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"}}
# As bench/peers/djtasks_settings.py (the django-tasks-db peer): no DEBUG. Django's own
# task_started / task_finished receivers still make an INFO record per task (dropped by
# the console handler's require_debug_true filter), as they do under django-tasks-db.
DEBUG = False
# BENCH_DJANGO_TASKS_LOG=WARNING measures without those two INFO records per task.
if os.environ.get("BENCH_DJANGO_TASKS_LOG"):
    LOGGING["loggers"] = {"django.tasks": {"level": os.environ["BENCH_DJANGO_TASKS_LOG"]}}

"""Minimal Django settings for django-tasks + django-tasks-db on ``BENCH_PG_URL``.

Worker: ``python djtasks_manage.py db_worker -v 0`` (defaults: one task at a time,
1 s idle poll, random start delay up to 1 s), as in peer-bench.md.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

_url = urlsplit(os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/oqron_bench_djtasks"))

SECRET_KEY = "bench-only-not-secret"
DEBUG = False
USE_TZ = True
INSTALLED_APPS = ["django_tasks", "django_tasks_db"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _url.path.lstrip("/"),
        "USER": _url.username or "postgres",
        "PASSWORD": _url.password or "",
        "HOST": _url.hostname or "127.0.0.1",
        "PORT": str(_url.port or 5432),
        # db_worker calls close_old_connections() around every task: with Django's default
        # CONN_MAX_AGE = 0 that is a new connection per task (~100 jobs/s here, a third of
        # peer-bench.md's figure). A persistent connection is what a worker deployment
        # sets, and it reproduces the reference's ~340 jobs/s.
        "CONN_MAX_AGE": None if os.environ.get("BENCH_DJANGO_CONN_MAX_AGE", "none") == "none"
        else int(os.environ["BENCH_DJANGO_CONN_MAX_AGE"]),
    }
}
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"}}

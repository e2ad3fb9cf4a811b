"""Settings of the live board the browser tests and screenshots start in subprocesses:
the project's settings (the ``OQRON_*`` variables pick the engine: SQLite in a temporary
file) plus the workload app whose ``oqron.py`` declares the test queues."""

from __future__ import annotations

from oqronboard.settings import *  # noqa: F403
from oqronboard.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.browser.workload.apps.WorkloadConfig"]
# Users are created for every session: fast hashing, no password strength rules.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
AUTH_PASSWORD_VALIDATORS: list[dict[str, str]] = []

"""Production settings: a secret key is required once DEBUG is off, and HTTPS hardening
is switched on by environment variables (README.md, Configuration)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = ("import oqronboard.settings as s; print(s.DEBUG, s.SECURE_HSTS_SECONDS, s.SECURE_SSL_REDIRECT, "
         "s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, getattr(s, 'SECURE_PROXY_SSL_HEADER', None))")


def settings_with(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env={**clean, **env}, capture_output=True,
                          text=True, timeout=60)


def test_debug_off_without_a_secret_key_refuses_to_start():
    result = settings_with(DJANGO_DEBUG="0")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "DJANGO_SECRET_KEY must be set" in result.stderr


def test_https_hardening_comes_from_the_environment():
    assert settings_with().stdout.split() == ["True", "0", "False", "False", "False", "None"]
    result = settings_with(DJANGO_DEBUG="0", DJANGO_SECRET_KEY="k" * 50, DJANGO_SECURE_HSTS_SECONDS="31536000",
                           DJANGO_SECURE_SSL_REDIRECT="1", DJANGO_SECURE_COOKIES="1",
                           DJANGO_SECURE_PROXY_SSL_HEADER="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:5] == ["False", "31536000", "True", "True", "True"]
    assert "HTTP_X_FORWARDED_PROTO" in result.stdout

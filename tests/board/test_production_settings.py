"""Production settings: a secret key is required once DEBUG is off, and HTTPS is on by
default there (Secure cookies, a year of HSTS, the redirect; issue 34, F3): `check
--deploy` is clean with only the secret key and the hosts set. A plain-HTTP deployment
opts out with DJANGO_PLAIN_HTTP=1 and `check --deploy` warns; development stays plain
HTTP (docs/how-to/secure-the-board.md, docs/reference/environment.md)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("DEBUG", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD",
         "SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_PROXY_SSL_HEADER",
         "SECURE_REDIRECT_EXEMPT", "OQRON_PLAIN_HTTP", "OQRON_SETTINGS_PROBLEMS", "SILENCED_SYSTEM_CHECKS")
PROBE = f"import json, oqronboard.settings as s; print(json.dumps({{n: getattr(s, n, None) for n in {NAMES!r}}}))"
KEY = secrets.token_urlsafe(50)
HTTPS = {"SECURE_HSTS_SECONDS": 31_536_000, "SECURE_HSTS_INCLUDE_SUBDOMAINS": True, "SECURE_HSTS_PRELOAD": True,
         "SECURE_SSL_REDIRECT": True, "SESSION_COOKIE_SECURE": True, "CSRF_COOKIE_SECURE": True}
PLAIN = {"SECURE_HSTS_SECONDS": 0, "SECURE_HSTS_INCLUDE_SUBDOMAINS": False, "SECURE_HSTS_PRELOAD": False,
         "SECURE_SSL_REDIRECT": False, "SESSION_COOKIE_SECURE": False, "CSRF_COOKIE_SECURE": False}


def environment(**env: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "OQRON_"))}
    return {**clean, **env}


def settings_with(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=environment(**env), capture_output=True,
                          text=True, timeout=60)


def values(**env: str) -> dict[str, Any]:
    result = settings_with(**env)
    assert result.returncode == 0, result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def check_deploy(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``django-admin check --deploy --fail-level WARNING`` on the standalone settings (an
    engine database of its own in ``tmp_path``)."""
    return subprocess.run(
        [sys.executable, "-m", "django", "check", "--deploy", "--fail-level", "WARNING"], cwd=tmp_path,
        env=environment(DJANGO_SETTINGS_MODULE="oqronboard.settings",
                        OQRON_DATABASE_URL=f"sqlite:///{tmp_path / 'oqron.sqlite3'}", **env),
        capture_output=True, text=True, timeout=120)


def test_debug_off_without_a_secret_key_refuses_to_start():
    result = settings_with(DJANGO_DEBUG="0")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "DJANGO_SECRET_KEY must be set" in result.stderr


def test_development_serves_plain_http():
    found = values()
    assert found["DEBUG"] is True and {k: found[k] for k in PLAIN} == PLAIN
    assert found["SECURE_PROXY_SSL_HEADER"] is None and found["OQRON_PLAIN_HTTP"] is False


def test_production_is_https_by_default():
    found = values(DJANGO_DEBUG="0", DJANGO_SECRET_KEY=KEY)
    assert {k: found[k] for k in HTTPS} == HTTPS
    assert found["SECURE_PROXY_SSL_HEADER"] is None  # only when a proxy is said to set it
    assert found["SECURE_REDIRECT_EXEMPT"] == [r"^health/"]  # probes reach the process over plain HTTP
    assert found["OQRON_SETTINGS_PROBLEMS"] == [] and found["SILENCED_SYSTEM_CHECKS"] is None


def test_each_variable_overrides_its_default():
    found = values(DJANGO_DEBUG="0", DJANGO_SECRET_KEY=KEY, DJANGO_SECURE_SSL_REDIRECT="0",
                   DJANGO_SECURE_HSTS_SECONDS="3600", DJANGO_SECURE_HSTS_PRELOAD="0",
                   DJANGO_SECURE_PROXY_SSL_HEADER="1")
    assert {k: found[k] for k in HTTPS} == {**HTTPS, "SECURE_SSL_REDIRECT": False, "SECURE_HSTS_SECONDS": 3600,
                                            "SECURE_HSTS_PRELOAD": False}
    assert found["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert {k: values(DJANGO_SECURE_COOKIES="1")[k] for k in PLAIN} == {  # development can opt in too
        **PLAIN, "SESSION_COOKIE_SECURE": True, "CSRF_COOKIE_SECURE": True}


def test_a_bad_hsts_value_keeps_the_year_and_is_reported():
    found = values(DJANGO_DEBUG="0", DJANGO_SECRET_KEY=KEY, DJANGO_SECURE_HSTS_SECONDS="a year")
    assert found["SECURE_HSTS_SECONDS"] == 31_536_000
    assert found["OQRON_SETTINGS_PROBLEMS"] == [
        "DJANGO_SECURE_HSTS_SECONDS must be a whole number of seconds (0 or more), got 'a year'."]


def test_plain_http_is_an_explicit_opt_out():
    found = values(DJANGO_DEBUG="0", DJANGO_SECRET_KEY=KEY, DJANGO_PLAIN_HTTP="1")
    assert {k: found[k] for k in PLAIN} == PLAIN and found["OQRON_PLAIN_HTTP"] is True


def test_check_deploy_is_clean_with_only_the_secret_key_and_the_hosts(tmp_path: Path):
    result = check_deploy(tmp_path, DJANGO_DEBUG="0", DJANGO_SECRET_KEY=KEY, DJANGO_ALLOWED_HOSTS="board.example.com")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues (0 silenced)" in result.stdout


def test_check_deploy_warns_of_plain_http_with_a_hint(tmp_path: Path):
    result = check_deploy(tmp_path, DJANGO_DEBUG="0", DJANGO_SECRET_KEY=KEY, DJANGO_ALLOWED_HOSTS="board.example.com",
                          DJANGO_PLAIN_HTTP="1")
    assert result.returncode != 0
    assert "(oqron.security.W001) The board serves plain HTTP (DJANGO_PLAIN_HTTP=1)" in result.stderr
    assert "HINT: Serve it over HTTPS and unset DJANGO_PLAIN_HTTP" in result.stderr
    assert "1 issue (4 silenced)" in result.stderr  # one warning, not Django's four besides it

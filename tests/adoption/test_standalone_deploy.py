"""The standalone board deployed from the wheel the way the README documents it:
``django-admin migrate``, ``collectstatic``, ``check --deploy``, then gunicorn serving
the health probes and the board's hashed static files through WhiteNoise."""

from __future__ import annotations

import secrets
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.adoption.conftest import Venv, clean_env, run

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # loopback only
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_the_documented_production_commands_serve_the_board(board_venv: Venv, tmp_path: Path):
    port = free_port()
    # The README's environment for a production board (SQLite here: the same commands on Postgres).
    env = clean_env(
        DJANGO_SETTINGS_MODULE="oqronboard.settings", DJANGO_DEBUG="0", DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="127.0.0.1", DJANGO_SECURE_HSTS_SECONDS="31536000", DJANGO_SECURE_SSL_REDIRECT="1",
        DJANGO_SECURE_COOKIES="1", DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS="1", DJANGO_SECURE_HSTS_PRELOAD="1",
        OQRON_DATABASE_URL=f"sqlite:///{tmp_path / 'board.sqlite3'}",
    )
    admin = board_venv.path / "bin" / "django-admin"
    run([admin, "migrate", "--noinput"], cwd=tmp_path, env=env)
    run([admin, "collectstatic", "--noinput"], cwd=tmp_path, env=env)
    deploy = run([admin, "check", "--deploy", "--fail-level", "WARNING"], cwd=tmp_path, env=env)
    assert "no issues" in deploy.stdout, deploy.stdout + deploy.stderr
    # Plain HTTP on loopback: the redirect to HTTPS is the proxy's job in front of it.
    served = {**env, "DJANGO_SECURE_SSL_REDIRECT": "0"}
    server = subprocess.Popen([board_venv.path / "bin" / "gunicorn", "oqronboard.wsgi", "--bind",
                               f"127.0.0.1:{port}", "--workers", "2"], cwd=tmp_path, env=served,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, body = get(f"http://127.0.0.1:{port}/health/live")
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "gunicorn did not come up"
                time.sleep(0.2)
        assert (status, body) == (200, b'{"status": "live"}')
        assert get(f"http://127.0.0.1:{port}/health/ready")[0] == 200
        status, page = get(f"http://127.0.0.1:{port}/")
        assert status == 200 and b"login-form" in page  # redirected to the login page
        stylesheet = page.decode().split('<link rel="stylesheet" href="')[1].split('"')[0]
        assert stylesheet.startswith("/static/oqronboard/css/board.")
        assert stylesheet != "/static/oqronboard/css/board.css"  # the hashed name
        assert get(f"http://127.0.0.1:{port}{stylesheet}")[0] == 200
    finally:
        server.terminate()
        server.wait(timeout=30)

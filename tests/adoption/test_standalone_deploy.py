"""The standalone board deployed from the wheel the way docs/how-to/production-workers.md documents it:
``django-admin migrate``, ``collectstatic``, ``check --deploy`` (clean with only the
secret key and the hosts set: HTTPS is the default), then gunicorn behind a
TLS-terminating proxy serving the health probes, the HTTPS redirect, HSTS, Secure
cookies and the board's hashed static files through WhiteNoise."""

from __future__ import annotations

import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from email.message import Message
from pathlib import Path

import pytest

from tests.adoption.conftest import Venv, clean_env, run

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # a redirect is an answer to look at, never followed


OPENER = urllib.request.build_opener(_NoRedirects)


def get(url: str, **headers: str) -> tuple[int, bytes, Message]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with OPENER.open(request, timeout=5) as response:  # loopback only
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers


def test_the_documented_production_commands_serve_the_board(board_venv: Venv, tmp_path: Path):
    port = free_port()
    # The documented environment for a production board: HTTPS is the default, nothing to switch on
    # (SQLite here: the same commands on Postgres).
    env = clean_env(
        DJANGO_SETTINGS_MODULE="oqronboard.settings", DJANGO_DEBUG="0", DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="127.0.0.1", OQRON_DATABASE_URL=f"sqlite:///{tmp_path / 'board.sqlite3'}",
    )
    admin = board_venv.path / "bin" / "django-admin"
    run([admin, "migrate", "--noinput"], cwd=tmp_path, env=env)
    run([admin, "collectstatic", "--noinput"], cwd=tmp_path, env=env)
    deploy = run([admin, "check", "--deploy", "--fail-level", "WARNING"], cwd=tmp_path, env=env)
    assert "no issues (0 silenced)" in deploy.stdout, deploy.stdout + deploy.stderr
    # The documented opt-out for a plain-HTTP internal board: the check says so, with its hint.
    plain = run([admin, "check", "--deploy", "--fail-level", "WARNING"], cwd=tmp_path,
                env={**env, "DJANGO_PLAIN_HTTP": "1"}, check=False)
    assert plain.returncode != 0 and "oqron.security.W001" in plain.stderr and "HINT:" in plain.stderr
    # Behind a TLS-terminating proxy, as docs/how-to/secure-the-board.md documents it: the proxy sets X-Forwarded-Proto
    # (this test plays the proxy on loopback) and is the one address whose X-Forwarded-For counts.
    # Three login attempts a day: no window boundary falls inside the test (docs/how-to/secure-the-board.md).
    served = {**env, "DJANGO_SECURE_PROXY_SSL_HEADER": "1", "OQRON_TRUSTED_PROXIES": "127.0.0.1",
              "OQRON_LOGIN_RATE_LIMIT": "3/86400"}
    server = subprocess.Popen([board_venv.path / "bin" / "gunicorn", "oqronboard.wsgi", "--bind",
                               f"127.0.0.1:{port}", "--workers", "2"], cwd=tmp_path, env=served,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base, https = f"http://127.0.0.1:{port}", {"X-Forwarded-Proto": "https"}
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, body, _ = get(f"{base}/health/live")
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "gunicorn did not come up"
                time.sleep(0.2)
        assert (status, body) == (200, b'{"status": "live"}')  # probes reach the process over plain HTTP
        assert get(f"{base}/health/ready")[0] == 200
        status, _, headers = get(f"{base}/")  # plain HTTP elsewhere: sent to HTTPS
        assert status == 301 and headers["Location"] == f"https://127.0.0.1:{port}/"
        status, _, headers = get(f"{base}/", **https)
        assert status == 302 and headers["Location"].startswith("/accounts/login/")
        status, page, headers = get(f"{base}/accounts/login/", **https)
        assert status == 200 and b"login-form" in page
        assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
        csrf = next(c for c in headers.get_all("Set-Cookie") if c.startswith("csrftoken="))
        assert "; Secure" in csrf
        stylesheet = page.decode().split('<link rel="stylesheet" href="')[1].split('"')[0]
        assert stylesheet.startswith("/static/oqronboard/css/board.")
        assert stylesheet != "/static/oqronboard/css/board.css"  # the hashed name
        assert get(f"{base}{stylesheet}", **https)[0] == 200
        # The proxy's X-Forwarded-For names the client: one client's lockout is not the next one's.
        token = page.decode().split('name="csrfmiddlewaretoken" value="')[1].split('"')[0]
        cookie = csrf.split(";")[0]

        def log_in(client: str) -> int:
            form = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": "admin", "password": "wrong"})
            request = urllib.request.Request(f"{base}/accounts/login/", data=form.encode(), headers={
                **https, "X-Forwarded-For": client, "Cookie": cookie, "Referer": f"https://127.0.0.1:{port}/"})
            try:
                with OPENER.open(request, timeout=10) as response:
                    return int(response.status)
            except urllib.error.HTTPError as exc:
                return exc.code

        assert [log_in("198.51.100.7") for _ in range(4)] == [200, 200, 200, 429]
        assert log_in("198.51.100.8") == 200
    finally:
        server.terminate()
        server.wait(timeout=30)

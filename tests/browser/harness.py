"""A live board for browser tests and screenshots: ``runserver`` and a real
``runworker`` in subprocesses on a temporary SQLite file, and Debian's Chromium
driven by Playwright.

Nothing here depends on pytest, so ``tests/browser/screenshots.py`` starts the very
same board. The subprocesses use ``tests/browser/live_settings.py`` (the project's
settings plus the workload app of ``tests/browser/workload/oqron.py``) and get their
engine from the ``OQRON_*`` variables.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("OQRON_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync",
]
PROJECT = "browser"
ENVIRONMENT = "production"
# The tests' users (tests/browser/prepare.py) and the demo's superuser (manage.py oqron_demo).
PASSWORDS = {"operator": "operator-pass", "viewer": "viewer-pass", "demo": "demo"}
START_TIMEOUT_S = 30


@dataclass
class LiveBoard:
    """A running board: its URL, its database and the processes serving it."""

    url: str
    database_url: str
    workdir: Path
    env: dict[str, str]
    project: str = PROJECT
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def durable(self) -> Any:
        """The engine's durable plane on the board's database (read it, don't write)."""
        import oqronkit
        from oqronkit import OqronConfig

        return oqronkit.open_durable(OqronConfig(mode="sqlite", database_url=self.database_url,
                                                 project=self.project, environment=ENVIRONMENT))

    def log(self, name: str) -> str:
        """The output of one subprocess so far (for failure messages)."""
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def check_alive(self) -> None:
        for name, proc in self.processes.items():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with status {proc.returncode}:\n{self.log(name)}")


# -- processes -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def board_env(workdir: Path, database_url: str, project: str = PROJECT) -> dict[str, str]:
    """The subprocesses' environment: our settings module and engine, nothing inherited
    that could point them at another database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OQRON_", "DJANGO_"))}
    env.update({
        "DJANGO_SETTINGS_MODULE": "tests.browser.live_settings",
        "DJANGO_DEBUG": "1",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "OQRON_MODE": "sqlite",
        "OQRON_DATABASE_URL": database_url,
        "OQRON_PROJECT": project,
        "OQRON_ENVIRONMENT": ENVIRONMENT,
        "OQRON_LOG_LEVEL": "WARNING",
        "BROWSER_FLAKY_DIR": str(workdir / "flaky"),
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
    })
    return env


def manage(env: dict[str, str], *args: str, timeout: float = 120) -> str:
    """Run ``manage.py`` to completion; raise with its output when it fails."""
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def spawn(board: LiveBoard, name: str, *args: str) -> None:
    """Start ``manage.py <args>`` in the background, output to ``<workdir>/<name>.log``."""
    log = open(board.workdir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
    board.processes[name] = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, env=board.env,
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    log.close()


def stop(proc: subprocess.Popen[bytes], *, grace: float = 8.0) -> None:
    """SIGTERM (a worker drains), then SIGKILL after ``grace`` seconds; this process only."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def wait_for(check: Callable[[], Any], *, timeout: float, what: str, board: LiveBoard | None = None) -> Any:
    """Poll ``check`` until it returns something truthy; raise naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        if board is not None:
            board.check_alive()
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status < 500
    except urllib.error.HTTPError as exc:
        return exc.code < 500
    except OSError:
        return False


@contextmanager
def live_board(
    *, workload: Callable[[LiveBoard], None] | None = None, demo: bool = False, keep: bool = False
) -> Iterator[LiveBoard]:
    """Migrate a fresh SQLite database, create the users, start ``runserver`` and
    ``runworker``, then run ``workload``; stop both processes on exit.

    ``demo``: the project's own demo instead of the tests' workload app (the project's
    settings with ``OQRON_DEMO=1``, and ``manage.py oqron_demo`` for its logins and jobs),
    in project ``shop``.
    """
    workdir = Path(tempfile.mkdtemp(prefix="oqron-browser-"))
    database_url = f"sqlite:///{workdir / 'board.sqlite3'}"
    project = "shop" if demo else PROJECT
    env = board_env(workdir, database_url, project)
    if demo:
        env.update(DJANGO_SETTINGS_MODULE="oqronboard.settings", OQRON_DEMO="1")
    port = free_port()
    board = LiveBoard(url=f"http://127.0.0.1:{port}", database_url=database_url, workdir=workdir, env=env,
                      project=project)
    try:
        manage(env, "migrate", "--noinput", "-v", "0")
        if demo:
            manage(env, "oqron_demo")
        else:
            manage(env, "shell", "-c", "from tests.browser.prepare import create_users; create_users()")
        spawn(board, "server", "runserver", f"127.0.0.1:{port}", "--noreload")
        spawn(board, "worker", "runworker", "--drain-timeout", "1", "--log-level", "warning")
        wait_for(lambda: _answers(f"{board.url}/accounts/login/"), timeout=START_TIMEOUT_S,
                 what="runserver to answer", board=board)
        if workload is not None:
            workload(board)
        yield board
    finally:
        for proc in board.processes.values():
            stop(proc)
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def default_workload(board: LiveBoard, *, flaky: int = 6, steady: int = 12, slow: int = 2) -> None:
    """Enqueue the test workload and wait until the flaky jobs are dead-lettered and a
    slow job is running."""
    manage(board.env, "shell", "-c",
           f"from tests.browser.prepare import enqueue; enqueue(flaky={flaky}, steady={steady}, slow={slow})")
    plane = board.durable()
    try:
        wait_for(lambda: plane.count("queue_dlq:payments") >= flaky, timeout=START_TIMEOUT_S,
                 what=f"{flaky} dead letters in payments (worker log below)", board=board)
        wait_for(lambda: running_run(board, plane), timeout=START_TIMEOUT_S,
                 what="a running reports run", board=board)
    finally:
        plane.close()


def running_run(board: LiveBoard, plane: Any = None) -> dict[str, Any] | None:
    """A run of ``reports`` that is running now, or None."""
    own = plane is None
    plane = plane or board.durable()
    try:
        page = plane.list("runs", status="running", name="reports", order="started", descending=True, limit=5)
        return page.records[0].value if page.records else None
    finally:
        if own:
            plane.close()


# -- the browser ---------------------------------------------------------------------


def chromium_missing() -> str | None:
    """Why Chromium cannot be used here, or None."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (apt-get install -y chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -r requirements-dev.txt)"
    return None


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium through Playwright's sync API (Playwright's own browsers are
    never downloaded here)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def log_in(page: Any, board: LiveBoard, username: str) -> None:
    """Fill the login form and wait to land on a board page."""
    page.goto(f"{board.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORDS[username])
    page.locator("form button[type=submit], form input[type=submit]").first.click()
    page.wait_for_url(lambda url: "/accounts/login" not in url, timeout=10_000)

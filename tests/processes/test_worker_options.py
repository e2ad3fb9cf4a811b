"""Issue 18: ``runworker`` and ``python -m oqronkit worker`` refuse an option out of
bounds (or a module that cannot be imported) with a message and exit status 2, before
they start; they used to run nothing, hang, crash or print a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

BAD = {
    "concurrency-negative": (["--concurrency", "-1"], "--concurrency: must be an integer from 1 to 1,000, got '-1'"),
    "concurrency-zero": (["--concurrency", "0"], "--concurrency: must be an integer from 1 to 1,000, got '0'"),
    "concurrency-huge": (["--concurrency", "100000"], "--concurrency: must be an integer from 1 to 1,000"),
    "concurrency-text": (["--concurrency", "ten"], "--concurrency: must be an integer from 1 to 1,000"),
    "processes-zero": (["--processes", "0"], "--processes: must be an integer from 1 to 256, got '0'"),
    "drain-negative": (["--drain-timeout", "-1"], "--drain-timeout: must be a number of seconds from 0 to 86,400"),
    "drain-nan": (["--drain-timeout", "nan"], "--drain-timeout: must be a number of seconds from 0 to 86,400, got"),
    "drain-inf": (["--drain-timeout", "inf"], "--drain-timeout: must be a number of seconds"),
    "import-missing": (["--import", "no_such_module_here"],
                       "cannot import the module 'no_such_module_here' (--import / OQRON_IMPORTS): No module named"),
}
COMMANDS = {
    "runworker": [sys.executable, "manage.py", "runworker"],
    "python-m-oqronkit": [sys.executable, "-m", "oqronkit", "worker"],
}


@pytest.mark.parametrize("command", COMMANDS, ids=list(COMMANDS))
@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_a_bad_worker_option_exits_2_with_a_message(command: str, case: str, tmp_path):
    args, message = BAD[case]
    env = {**os.environ, "OQRON_MODE": "sqlite", "OQRON_DATABASE_URL": f"sqlite:///{tmp_path / 'o.sqlite3'}",
           "DJANGO_SETTINGS_MODULE": "oqronboard.settings"}
    done = subprocess.run([*COMMANDS[command], "--burst", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr

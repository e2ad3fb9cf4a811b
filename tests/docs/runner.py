"""Run one docs page's examples in page order, in a fresh directory with its own state.

```python blocks run in one interpreter session (tests/docs/session.py), ```sh blocks under
``bash -euo pipefail``, both in the page's temporary directory with the repository's
.venv/bin first on PATH and none of the caller's OQRON_*/DATABASE_URL/REDIS_URL variables;
``<!-- file: -->`` blocks are written there. The first failing block stops the page with an
:class:`ExampleFailed` naming the page and line, its error and its output.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from tests.docs.blocks import DOCS, ROOT, Block, Page
from tests.docs.page_services import page_services

SESSION = Path(__file__).with_name("session.py")
BLOCK_TIMEOUT_S = 180.0
#: The caller's configuration never leaks into a page: the examples set what they need.
DROPPED_PREFIXES = ("OQRON_", "PYTEST_", "DJANGO_")
DROPPED = frozenset({"DATABASE_URL", "REDIS_URL", "PYTHONPATH", "PYTHONSTARTUP", "VIRTUAL_ENV"})
OUTPUT_TAIL = 4000


class ExampleFailed(Exception):
    """A block failed; the message starts with ``docs/page.md:line``."""


@dataclass
class Outcome:
    page: str
    python: int = 0
    sh: int = 0
    files: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, reason)
    seconds: float = 0.0


def venv_bin() -> Path:
    own = ROOT / ".venv" / "bin"
    return own if (own / "python").exists() else Path(sys.executable).parent


def clean_environment(services: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED_PREFIXES) and k not in DROPPED}
    bin_dir = venv_bin()
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(bin_dir.parent)
    env["PYTHONUNBUFFERED"] = "1"
    return {**env, **services}


def run_page(page: Page, tmp: Path, timeout: float = BLOCK_TIMEOUT_S) -> Outcome:
    workdir, scratch = tmp / "page", tmp / "blocks"
    workdir.mkdir(parents=True)
    scratch.mkdir()
    outcome = Outcome(page.path)
    started = time.monotonic()
    with page_services(page.services) as service_env, open(scratch / "output.log", "w+b") as log:
        env = clean_environment(service_env)
        session: PythonSession | None = None
        try:
            for block in page.blocks:
                if block.file is not None:
                    target = workdir / block.file
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(block.code, encoding="utf-8")
                    outcome.files += 1
                elif block.skip is not None:
                    outcome.skipped.append((block.where, block.skip))
                elif block.lang in ("python", "sh"):
                    start = log.seek(0, os.SEEK_END)
                    if block.lang == "python":
                        session = session or PythonSession(workdir, env, log)
                        error = session.run(block, timeout)
                        outcome.python += 1
                    else:
                        error = run_sh(block, workdir, scratch, env, log, timeout)
                        outcome.sh += 1
                    _raise_if_failed(block, error, log, start)
        finally:
            if session is not None:
                session.close()
    outcome.seconds = time.monotonic() - started
    return outcome


def _raise_if_failed(block: Block, error: str | None, log: IO[bytes], start: int) -> None:
    if error is None:
        return
    log.seek(start)
    output = log.read().decode("utf-8", "replace")
    if len(output) > OUTPUT_TAIL:
        output = "...\n" + output[-OUTPUT_TAIL:]
    shown = f"\n--- its output ---\n{output.rstrip()}" if output.strip() else ""
    raise ExampleFailed(f"{block.where}: the ```{block.lang} block failed\n{error.rstrip()}{shown}")


def run_sh(block: Block, workdir: Path, scratch: Path, env: dict[str, str], log: IO[bytes],
           timeout: float) -> str | None:
    offset = block.first_code_line - 2  # the trap line comes first
    trap = f"trap 'echo \"failed at docs/{block.page}:$((LINENO + {offset})): $BASH_COMMAND\" >&2' ERR\n"
    script = scratch / f"block-{block.line}.sh"
    script.write_text(trap + block.code, encoding="utf-8")
    log.flush()
    proc = subprocess.Popen(["bash", "-euo", "pipefail", str(script)], cwd=workdir, env=env,
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s (long-running commands must stop by themselves)"
    finally:
        _kill_group(proc)  # background commands the block left behind
    return None if code == 0 else f"exited with status {code}"


class PythonSession:
    """One interpreter for the page's ```python blocks, fed block by block."""

    def __init__(self, workdir: Path, env: dict[str, str], log: IO[bytes]) -> None:
        cmd_read, cmd_write = os.pipe()
        reply_read, reply_write = os.pipe()
        self.proc = subprocess.Popen(
            [str(venv_bin() / "python"), str(SESSION), str(cmd_read), str(reply_write)], cwd=workdir, env=env,
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, pass_fds=(cmd_read, reply_write),
            start_new_session=True)
        os.close(cmd_read)
        os.close(reply_write)
        self.commands = os.fdopen(cmd_write, "w", encoding="utf-8")
        self.replies = os.fdopen(reply_read, "r", encoding="utf-8")
        self.stuck = False

    def run(self, block: Block, timeout: float) -> str | None:
        command = {"path": str(DOCS / block.page), "line": block.first_code_line, "code": block.code}
        try:
            self.commands.write(json.dumps(command) + "\n")
            self.commands.flush()
        except BrokenPipeError:
            return f"the interpreter session had exited (status {self.proc.wait()})"
        ready, _, _ = select.select([self.replies], [], [], timeout)
        if not ready:
            self.stuck = True
            return f"timed out after {timeout:.0f} s (long-running calls must stop by themselves)"
        line = self.replies.readline()
        if not line:
            return f"the interpreter session exited (status {self.proc.wait()})"
        reply = json.loads(line)
        return None if reply["ok"] else str(reply["error"])

    def close(self) -> None:
        for stream in (self.commands, self.replies):
            try:
                stream.close()
            except OSError:  # the session died with data unread; nothing to keep
                pass
        if not self.stuck:
            try:
                self.proc.wait(10)  # its last block's cleanup (atexit, open files) runs
            except subprocess.TimeoutExpired:
                pass
        _kill_group(self.proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()

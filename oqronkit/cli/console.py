"""Where the CLI talks to its operator: streams, whether a person is there, who they are,
and the confirmation a destructive command asks for."""

from __future__ import annotations

import getpass
import os
import sys
from dataclasses import dataclass, field
from typing import TextIO

from ..errors import OqronError


class UsageProblem(OqronError, ValueError):
    """Bad input on the command line, or a destructive command without ``--yes`` where
    nobody can answer its question: exit status 2."""


class NotConfirmed(OqronError):
    """The operator answered no: nothing was done (exit status 1)."""


def os_user() -> str:
    """The OS user running the command: the audit's actor. ``getpass`` reads LOGNAME,
    USER... then the password database; a container's anonymous uid still gets a name."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid:{os.getuid()}" if hasattr(os, "getuid") else "unknown"


@dataclass
class Console:
    """The streams a command uses; ``interactive`` is whether a person can answer a question."""

    stdin: TextIO = field(default_factory=lambda: sys.stdin)
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    interactive: bool | None = None
    user: str = field(default_factory=os_user)

    def __post_init__(self) -> None:
        if self.interactive is None:
            self.interactive = _is_tty(self.stdin) and _is_tty(self.stderr)

    def confirm(self, question: str, *, yes: bool) -> None:
        """Go on when ``--yes`` was given or the operator types y/yes; raise otherwise."""
        if yes:
            return
        if not self.interactive:
            raise UsageProblem(f"{question} Nobody can answer here (no terminal): add --yes to go on.")
        self.stderr.write(f"{question} [y/N] ")
        self.stderr.flush()
        try:
            answer = self.stdin.readline().strip().lower()
        except KeyboardInterrupt:  # Ctrl-C at the question is a no, not a traceback
            answer = ""
            self.stderr.write("\n")
        if answer not in ("y", "yes"):
            raise NotConfirmed("Nothing done: not confirmed.")


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False

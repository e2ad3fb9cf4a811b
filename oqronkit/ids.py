"""Identifiers: time-ordered so ids sort roughly by creation, random enough to never clash."""

from __future__ import annotations

import os
import secrets
import socket

from .clock import now_ms


def new_id() -> str:
    """A 26-character lowercase hex-ish id: 12 hex digits of ms time + 14 random."""
    return f"{now_ms():012x}{secrets.token_hex(7)}"


def node_id() -> str:
    """This process's worker id: host, pid and a random suffix (pids get reused)."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"

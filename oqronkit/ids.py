"""Identifiers: time-ordered so ids sort roughly by creation, random enough to never clash."""

from __future__ import annotations

import itertools
import os
import random
import secrets
import socket
from collections.abc import Callable

from .clock import now_ms

# Ids are not secrets, so they come from a generator seeded once per process from the
# OS (and again in every forked child, which would otherwise repeat its parent's ids)
# instead of os.urandom per id: that is a system call that also hands the GIL to
# another thread, on a path taken twice per job.
_random = random.Random(secrets.randbits(128))
os.register_at_fork(after_in_child=lambda: _random.seed(secrets.randbits(128)))


def new_id() -> str:
    """A 26-character lowercase hex-ish id: 12 hex digits of ms time + 14 random."""
    return f"{now_ms():012x}{_random.getrandbits(56):014x}"


def ascending_ids_at(at_ms: int) -> Callable[[], str]:
    """:func:`new_id`'s format for a batch made at ``at_ms``, each id above the one
    before: a random start, then counting up. Rows keyed on these ids go into an index
    one after another at the same place (one hot leaf, splits at its right edge) rather
    than at random leaves. The start leaves room to count 2**55 ids without a carry
    into the time part; two batches of one millisecond overlap only if their random
    starts are closer than their lengths."""
    prefix, counter = f"{at_ms:012x}", itertools.count(_random.getrandbits(55))
    return lambda: f"{prefix}{next(counter):014x}"


def node_id() -> str:
    """This process's worker id: host, pid and a random suffix (pids get reused)."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"

"""The bounds of every number a caller can hand the engine (``add`` options, queue
declarations, ``runworker`` options), defined once so every check and message agrees.

Each bound keeps a value storable alike in every plane: epoch milliseconds below the
year 10000 are exact in a double (a Redis score), fit a bigint (Postgres's hot table) and
a SQLite integer, and are what ``datetime`` can show; a duration of at most 100 years
added to any such time stays below that.
"""

from __future__ import annotations

#: 10000-01-01T00:00:00Z in epoch ms: the first instant no plane (nor datetime) can hold alike.
MAX_EPOCH_MS = 253_402_300_800_000
#: The longest duration (delay, timeout, backoff, lease, TTL): 100 years, in seconds.
MAX_DURATION_S = 100 * 365 * 86_400
#: At most this many attempts per job (``attempts``; a queue's ``retries`` is one less).
MAX_ATTEMPTS = 1_000
#: At most this many concurrent handlers per queue (declaration and ``--concurrency``).
MAX_CONCURRENCY = 1_000
#: The longest job id, correlation id or tag, in characters.
MAX_ID_LENGTH = 200

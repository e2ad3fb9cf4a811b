"""Every error the engine raises derives from :class:`OqronError`.

Each subclass names what went wrong and what to do about it, and also inherits the
natural built-in exception so callers can catch ``ValueError`` for bad input.
"""

from __future__ import annotations

from datetime import timedelta


class OqronError(Exception):
    """Base class of every error raised by oqronkit."""


class ConfigurationError(OqronError, ValueError):
    """A configuration value is invalid; the message names the setting and the fix."""


class RecordTooLarge(OqronError, ValueError):
    """A record's JSON encoding is larger than the configured ``max_record_bytes``."""


class InvalidRecord(OqronError, ValueError):
    """A record cannot be stored: it is not a JSON object or not JSON-serialisable."""


class DuplicateRecord(InvalidRecord):
    """A record that had to be new (``insert_new``) has a key that already exists."""


class InvalidNamespace(OqronError, ValueError):
    """A namespace or id is empty or otherwise unusable."""


class BackendUnavailable(OqronError, ConnectionError):
    """The storage backend could not be reached or failed; the original error is chained."""


class LegacyLayoutDetected(OqronError, RuntimeError):
    """The database still has the v1 ``oqron_kv`` table; see the message for the fix."""


class MissingDependency(OqronError, ImportError):
    """An optional driver (psycopg, redis) is not installed for the configured mode."""


class UnknownQueue(OqronError, LookupError):
    """No queue of that name is declared in this process; declare it with
    ``oqronkit.queue(name)`` (publisher-only is fine) before adding jobs."""


class InvalidJob(OqronError, ValueError):
    """A job's payload or options are invalid (not JSON-serialisable, too large, a bad
    priority or delay, a dependency cycle); nothing was written."""


class JobNotFound(OqronError, LookupError):
    """No job (or dead letter) with that id exists in this queue."""


class InvalidState(OqronError, RuntimeError):
    """The job is not in a state that allows this action (e.g. cancelling a finished job)."""


class Discard(OqronError):
    """Raised inside a handler (or by ``ctx.discard``) to fail the job now, with no retries."""


class RetryAfter(OqronError):
    """Raised inside a handler: this attempt failed, and the next one (if any is left)
    waits ``delay`` seconds (a number or a timedelta) instead of the queue's backoff
    (a server's ``Retry-After``, a published retry schedule)."""

    def __init__(self, delay: float | timedelta, message: str = "") -> None:
        super().__init__(message or f"retry after {delay} s")
        self.delay = delay


class Postpone(OqronError):
    """Raised inside a handler: the attempt did not really happen (a circuit breaker is
    open, a rate limit is spent). The job waits ``delay`` seconds and its attempt is
    not counted; its run is recorded only if it was already written (status ``held``)."""

    def __init__(self, delay: float | timedelta, reason: str = "postponed") -> None:
        super().__init__(reason)
        self.delay = delay
        self.reason = reason


class InvalidSchedule(ConfigurationError):
    """A cron or schedule definition is invalid (expression, time zone, policy, bound);
    raised when the definition is declared, with the field and the fix in the message."""


class UnknownSchedule(OqronError, LookupError):
    """No cron or schedule of that name is stored; declare it (``oqronkit.cron`` /
    ``oqronkit.schedule``) and let a worker start once, or check the name."""


class UnknownOperation(OqronError, LookupError):
    """No tracked bulk operation has this id in this project and environment."""

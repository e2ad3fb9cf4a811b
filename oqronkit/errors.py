"""Every error the engine raises derives from :class:`OqronError`.

Each subclass names what went wrong and what to do about it, and also inherits the
natural built-in exception so callers can catch ``ValueError`` for bad input.
"""

from __future__ import annotations


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


class InvalidSchedule(ConfigurationError):
    """A cron or schedule definition is invalid (expression, time zone, policy, bound);
    raised when the definition is declared, with the field and the fix in the message."""


class UnknownSchedule(OqronError, LookupError):
    """No cron or schedule of that name is stored; declare it (``oqronkit.cron`` /
    ``oqronkit.schedule``) and let a worker start once, or check the name."""

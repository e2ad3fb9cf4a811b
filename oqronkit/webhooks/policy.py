"""What a webhook's options mean: the retry schedule, the secrets, and what each HTTP
answer calls for (done, retried, or dead at once)."""

from __future__ import annotations

import email.utils
import math
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

from ..errors import ConfigurationError, InvalidJob
from ..queues.backoff import to_ms
from .endpoints import ENDPOINT_ID
from .header_secrets import check_value
from .signing import secret_key

#: The published schedule: the delay before each attempt (immediately, 5 s, 5 min, 30 min,
#: 2 h, 5 h, 10 h, 10 h): 8 attempts over about 27.6 hours.
DEFAULT_SCHEDULE_MS: tuple[int, ...] = (0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000)
#: 4xx answers that may succeed later; every other 4xx is dead at once.
RETRYABLE_4XX = frozenset({408, 409, 425, 429})
#: Answers whose Retry-After header sets the next attempt's delay.
RETRY_AFTER_STATUSES = frozenset({429, 503})
MAX_RETRY_AFTER_MS = 86_400_000  # a day: a receiver cannot park a delivery for longer
Verdict = Literal["delivered", "retry", "dead"]


def schedule_ms(schedule: Sequence[float | timedelta] | None, retries: int | None, webhook: str) -> tuple[int, ...]:
    """The delay before each attempt: ``schedule`` (default :data:`DEFAULT_SCHEDULE_MS`)
    cut or stretched (its last delay repeated) to ``retries + 1`` attempts."""
    if schedule is None:
        delays = list(DEFAULT_SCHEDULE_MS)
    else:
        if isinstance(schedule, (str, bytes)) or not isinstance(schedule, Sequence) or not 0 < len(schedule) <= 100:
            raise ConfigurationError(f"Webhook {webhook!r}: schedule must be a list of 1-100 delays (seconds or "
                                     f"timedeltas), the first before the first attempt; got {schedule!r}.")
        try:
            delays = [to_ms(delay, what="a schedule delay") or 0 for delay in schedule]
        except InvalidJob as exc:
            raise ConfigurationError(f"Webhook {webhook!r}: {exc}") from None
    if retries is not None:
        if not isinstance(retries, int) or isinstance(retries, bool) or not 0 <= retries <= 99:
            raise ConfigurationError(f"Webhook {webhook!r}: retries must be an integer from 0 to 99, got {retries!r}.")
        delays = (delays + [delays[-1]] * retries)[:retries + 1]
    return tuple(delays)


def secret_keys(secret: str | None, secrets: Mapping[str, str] | None, webhook: str) -> dict[str, bytes]:
    """Secret id -> HMAC key: ``secret`` is the id ``default``; ``secrets`` maps ids to
    secrets (two during a rotation: every endpoint then gets a signature of each)."""
    if (secret is None) == (secrets is None):
        raise ConfigurationError(f"Webhook {webhook!r}: give secret='whsec_...' or secrets={{id: 'whsec_...'}} "
                                 "(exactly one; oqronkit.webhooks.new_secret() makes one).")
    given = {"default": secret} if secret is not None else secrets
    if not isinstance(given, Mapping) or not given:
        raise ConfigurationError(f"Webhook {webhook!r}: secrets must be a non-empty mapping of ids to secrets.")
    keys = {}
    for secret_id, value in given.items():
        if not isinstance(secret_id, str) or not ENDPOINT_ID.match(secret_id):
            raise ConfigurationError(f"Webhook {webhook!r}: secret id {secret_id!r} must be 1-64 letters, digits, "
                                     "'_', '.' or '-'.")
        try:
            keys[secret_id] = secret_key(value)
        except ConfigurationError as exc:  # never echo the secret itself
            raise ConfigurationError(f"Webhook {webhook!r}: secret {secret_id!r}: {exc}") from None
    return keys


def header_secret_values(given: Mapping[str, str] | None, webhook: str) -> dict[str, str]:
    """Header secret id -> value (``header_secrets``): the values of the endpoints' secret
    headers, held like the signing secrets by every process that delivers."""
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise ConfigurationError(f"Webhook {webhook!r}: header_secrets must be a mapping of ids to header values.")
    values = {}
    for secret_id, value in given.items():
        if not isinstance(secret_id, str) or not ENDPOINT_ID.match(secret_id):
            raise ConfigurationError(f"Webhook {webhook!r}: header secret id {secret_id!r} must be 1-64 letters, "
                                     "digits, '_', '.' or '-'.")
        values[secret_id] = check_value(value, f"Webhook {webhook!r}: header secret {secret_id!r}")
    return values


def check_timeout(timeout: Any, webhook: str) -> int:
    if not isinstance(timeout, (int, float, timedelta)) or isinstance(timeout, bool):
        raise ConfigurationError(f"Webhook {webhook!r}: timeout must be seconds or a timedelta, got {timeout!r}.")
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    if not math.isfinite(seconds) or not 0 < seconds <= 300:
        raise ConfigurationError(f"Webhook {webhook!r}: timeout must be above 0 and at most 300 seconds, "
                                 f"got {timeout!r}.")
    return round(seconds * 1000)


def verdict(status: int) -> Verdict:
    """2xx delivered; redirects (never followed), 408/409/425/429 and 5xx retried; every
    other 4xx dead at once (the receiver refuses this message: retrying cannot help)."""
    if 200 <= status < 300:
        return "delivered"
    if 400 <= status < 500 and status not in RETRYABLE_4XX:
        return "dead"
    return "retry"


def retry_after_ms(value: str | None, now_ms: int) -> int | None:
    """A Retry-After header (seconds, or an HTTP date) as a delay in ms, at most a day;
    None when absent or unreadable."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return min(int(text) * 1000, MAX_RETRY_AFTER_MS)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0, min(round(when.timestamp() * 1000) - now_ms, MAX_RETRY_AFTER_MS))


def next_delay_ms(schedule: Sequence[int], attempt: int) -> int:
    """The delay after attempt ``attempt`` (1-based) failed: the schedule's next entry."""
    return schedule[min(attempt, len(schedule) - 1)]

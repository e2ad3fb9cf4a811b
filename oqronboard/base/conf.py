"""The board's settings, each with a default, so a host project sets none to start.

Each is read as ``settings.<NAME>`` when the project sets it, else from the environment
variable of the same name, else its default (:func:`oqronkit.contrib.django.conf.setting`),
in a host project and the standalone one alike.
"""

from __future__ import annotations

from collections.abc import Mapping

from oqronkit.contrib.django.conf import comma_list, pairs, setting

#: The variable the standalone project reads its read replica's URL from (README, "Read replica").
READ_URL_VARIABLE = "OQRON_READ_DATABASE_URL"
#: A bearer token shorter than this never authenticates (a guessable secret is no secret).
MIN_TOKEN_CHARS = 20


def api_tokens() -> Mapping[str, str]:
    """``OQRON_API_TOKENS``: the JSON API's bearer tokens, ``{token: username}``
    (``"<token>=alice,<token>=bob"`` in the environment)."""
    return setting("OQRON_API_TOKENS", {}, pairs) or {}


def metrics_token() -> str:
    """``OQRON_METRICS_TOKEN``: the bearer token Prometheus scrapes ``metrics`` with."""
    return setting("OQRON_METRICS_TOKEN", "", str) or ""


def internal_queues() -> set[str]:
    """``OQRON_INTERNAL_QUEUES``: queues the overview leaves out (comma-separated)."""
    return set(setting("OQRON_INTERNAL_QUEUES", [], comma_list) or ())


def cache_seconds() -> float:
    """``OQRON_BOARD_CACHE_SECONDS``: how long every viewer's poll shares what it computed."""
    return float(setting("OQRON_BOARD_CACHE_SECONDS", 2.0, float) or 0)


def read_database_alias() -> str | None:
    """``OQRON_READ_DATABASE_ALIAS``: the alias of a read replica the pages read, or None."""
    return setting("OQRON_READ_DATABASE_ALIAS", None, str) or None


def read_replica_max_lag_seconds() -> float:
    return float(setting("OQRON_READ_REPLICA_MAX_LAG_SECONDS", 30.0, float))


def read_replica_check_seconds() -> float:
    return float(setting("OQRON_READ_REPLICA_CHECK_SECONDS", 2.0, float))


def read_pin_seconds() -> float:
    return float(setting("OQRON_READ_PIN_SECONDS", 5.0, float))

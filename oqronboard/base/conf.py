"""The board's settings, each with a default, so a host project sets none to start.

Each is read as ``settings.<NAME>`` when the project sets it, else from the environment
variable of the same name, else its default (:func:`oqronkit.contrib.django.conf.setting`),
in a host project and the standalone one alike.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from oqronkit import ConfigurationError
from oqronkit.contrib.django.conf import comma_list, pairs, setting

#: The variable the standalone project reads its read replica's URL from (docs/how-to/scale-out.md).
READ_URL_VARIABLE = "OQRON_READ_DATABASE_URL"
#: A bearer token shorter than this never authenticates (a guessable secret is no secret).
MIN_TOKEN_CHARS = 20

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
#: (attempts, seconds): one username from one address, and one address whatever the usernames.
LOGIN_RATE_LIMIT = (10, 60.0)
LOGIN_ADDRESS_RATE_LIMIT = (30, 60.0)  # room for a few people behind one NAT


def api_tokens() -> Mapping[str, object]:
    """``OQRON_API_TOKENS``: the JSON API's bearer tokens, ``{token: holder}``: a username,
    ``"alice:shop/production:shop/*"`` (the user, limited to those scopes) or
    ``{"user": "alice", "scopes": [...]}`` (``"<token>=alice,<token>=bob:shop/*"`` in the
    environment); :mod:`oqronboard.base.tokens` reads each holder."""
    return setting("OQRON_API_TOKENS", {}, pairs) or {}


#: Environments whose actions also need ``oqronboard.operate_production``, unless set.
PRODUCTION_ENVIRONMENTS = ("production", "prod", "live")


def production_environments() -> frozenset[str]:
    """``OQRON_PRODUCTION_ENVIRONMENTS`` (comma-separated in the environment), lower-cased:
    their badge is red and acting in them needs ``oqronboard.operate_production``."""
    names = setting("OQRON_PRODUCTION_ENVIRONMENTS", PRODUCTION_ENVIRONMENTS, comma_list)
    if isinstance(names, str):  # a setting written as one string, not a list
        names = comma_list(names)
    return frozenset(str(name).strip().lower() for name in names or ())


def configured_scope_open() -> bool:
    """``OQRON_CONFIGURED_SCOPE_OPEN`` (default on): every viewer sees the engine's own
    project/environment, and every operator acts in it, without a scope grant."""
    return bool(setting("OQRON_CONFIGURED_SCOPE_OPEN", True, flag))


def flag(raw: str) -> bool:
    """An environment variable's on/off: 1/true/yes/on or 0/false/no/off."""
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{raw!r} is neither on (1, true, yes, on) nor off (0, false, no, off)")


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


def trusted_proxies() -> tuple[IPNetwork, ...]:
    """``OQRON_TRUSTED_PROXIES``: the reverse proxies whose ``X-Forwarded-For`` the login
    limiter believes, as addresses or CIDR networks (a list, or comma-separated in the
    environment); none by default. Raises :class:`ConfigurationError` naming a bad entry."""
    value = setting("OQRON_TRUSTED_PROXIES", [], comma_list)
    entries = comma_list(value) if isinstance(value, str) else value
    if not isinstance(entries, list | tuple | set | frozenset):
        raise ConfigurationError(f"OQRON_TRUSTED_PROXIES must be a list of addresses or networks, got {value!r}.")
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(str(entry).strip(), strict=False))
        except ValueError as exc:
            raise ConfigurationError(f"OQRON_TRUSTED_PROXIES: {entry!r} is not an IP address or network "
                                     "(such as 10.0.0.5 or 10.0.0.0/24).") from exc
    return tuple(networks)


def _attempts_per_seconds(value: object) -> tuple[int, float]:
    """``(10, 60)`` or ``"10/60"`` -> ``(10, 60.0)``."""
    parts: object = value.split("/") if isinstance(value, str) else value
    if not isinstance(parts, list | tuple) or len(parts) != 2:
        raise ValueError(f"{value!r} is not (attempts, seconds), such as (10, 60) or 10/60")
    attempts, seconds = int(parts[0]), float(parts[1])
    if attempts < 1 or not 0 < seconds < float("inf"):
        raise ValueError(f"{value!r}: attempts must be at least 1 and seconds above 0")
    return attempts, seconds


def login_rate_limits() -> tuple[tuple[int, float], tuple[int, float]]:
    """``OQRON_LOGIN_RATE_LIMIT`` (one username from one address) and
    ``OQRON_LOGIN_ADDRESS_RATE_LIMIT`` (one address), each ``(attempts, seconds)``
    (``"10/60"`` in the environment). Raises :class:`ConfigurationError` naming a bad one."""
    found = []
    for name, default in (("OQRON_LOGIN_RATE_LIMIT", LOGIN_RATE_LIMIT),
                          ("OQRON_LOGIN_ADDRESS_RATE_LIMIT", LOGIN_ADDRESS_RATE_LIMIT)):
        try:
            found.append(_attempts_per_seconds(setting(name, default, str)))
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(f"{name}: {exc}.") from exc
    return found[0], found[1]

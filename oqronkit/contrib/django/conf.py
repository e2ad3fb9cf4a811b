"""Settings with the environment as their fallback: ``settings.NAME`` when the project
sets it, else the ``NAME`` environment variable parsed, else the default. So a host and
the standalone project read ``OQRON_IMPORTS``, ``OQRON_API_TOKENS`` and the rest alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from oqronkit import ConfigurationError
from oqronkit.settings_table import django_setting

_MISSING = object()


def setting(name: str, default: Any, parse: Callable[[str], Any], environ: Mapping[str, str] | None = None) -> Any:
    """``settings.<name>``, else ``parse(os.environ[name])``, else ``default``. A
    variable ``parse`` refuses raises :class:`ConfigurationError` naming it. ``name`` must be
    in oqronkit/settings_table.py, whose reference page documents it."""
    from django.conf import settings

    django_setting(name)

    value = getattr(settings, name, _MISSING)
    if value is not _MISSING:
        return value
    raw = (os.environ if environ is None else environ).get(name, "").strip()
    if not raw:
        return default
    try:
        return parse(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"The environment variable {name} cannot be read: {exc}") from exc


def environment() -> Mapping[str, str]:
    """The process environment, read here only (the ``OQRON_*`` variables ``OQRON`` leaves out)."""
    return os.environ


def comma_list(raw: str) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``."""
    return [part.strip() for part in raw.split(",") if part.strip()]


def pairs(raw: str) -> dict[str, str]:
    """``"k1=v1,k2=v2"`` -> ``{"k1": "v1", "k2": "v2"}``; an entry without ``=`` is skipped."""
    found: dict[str, str] = {}
    for part in raw.split(","):
        key, _, value = part.partition("=")
        if key.strip() and value.strip():
            found[key.strip()] = value.strip()
    return found


def imports() -> list[str]:
    """Modules ``runworker`` imports besides the apps' ``oqron.py``: ``OQRON_IMPORTS``."""
    return list(setting("OQRON_IMPORTS", [], comma_list))

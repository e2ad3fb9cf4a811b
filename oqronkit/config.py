"""The engine's one configuration object: frozen, validated, and reading no environment.

Builders (:func:`config_from_mapping`, :func:`config_from_env`) turn settings into an
:class:`OqronConfig`; Django's side builds it in ``oqronkit/contrib/django/engine.py``. A worker
process's own variables (CPU pinning, its supervisor slot, ``OQRON_IMPORTS``) become a
:class:`WorkerEnvironment`. This module is the only one in ``oqronkit`` that reads
``os.environ`` (tests/engine/test_config.py checks it).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Final, Literal

from .errors import ConfigurationError
from .settings_table import ENGINE_VARIABLES

Mode = Literal["memory", "sqlite", "postgres", "redis", "redis-postgres"]
MODES: Final[tuple[str, ...]] = ("memory", "sqlite", "postgres", "redis", "redis-postgres")
DEFAULT_SQLITE_URL: Final = "sqlite:///oqron.sqlite3"
DEFAULT_MAX_RECORD_BYTES: Final = 1024 * 1024
DEFAULT_BACKEND_WAIT_S: Final = 5.0
MAX_BACKEND_WAIT_S: Final = 300.0
DEFAULT_HORIZON_WARNING_S: Final = 30.0
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
#: The OQRON_* variables of the engine's settings, from the one table of every setting.
_ENV_KEYS: Final[dict[str, str]] = ENGINE_VARIABLES
#: Modules that keep logs; "cron" and "schedule" both name the scheduler's.
LOG_MODULES: Final[tuple[str, ...]] = ("queue", "worker", "scheduler", "topic", "webhook", "services", "engine")
LOG_MODULE_NAMES: Final[tuple[str, ...]] = (*LOG_MODULES, "cron", "schedule", "all")
CPU_AFFINITY_CHOICES: Final[tuple[str, ...]] = ("auto", "off")
WORKER_SLOT_VAR: Final = "OQRON_WORKER_SLOT"
_NEEDS_DATABASE: Final = {"sqlite": "sqlite", "postgres": "postgresql", "redis-postgres": "postgresql"}


@dataclass(frozen=True, kw_only=True)
class OqronConfig:
    """Validated engine settings. Construct with keywords; invalid values raise
    :class:`ConfigurationError` naming the setting."""

    mode: Mode = "sqlite"
    database_url: str | None = DEFAULT_SQLITE_URL
    redis_url: str | None = None
    project: str = "default"
    environment: str = "development"
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    acknowledge_v1_layout: bool = False
    allow_redis_eviction: bool = False
    run_log_limit: int = 200
    run_timeline_limit: int = 100
    #: The leader runs ANALYZE / VACUUM on the PostgreSQL tables where autovacuum lags.
    table_upkeep: bool = True
    #: Seconds a call waits for an unreachable Postgres or Redis (a free connection, a
    #: reconnect) before it raises BackendUnavailable.
    backend_wait: float = DEFAULT_BACKEND_WAIT_S
    #: Seconds a PostgreSQL transaction may hold the xmin horizon (dead rows of every
    #: table kept) before the board's health panel and /metrics warn (Engine.database_health).
    horizon_warning_s: float = DEFAULT_HORIZON_WARNING_S
    #: Modules whose engine log records are kept in ``module_logs:<module>`` (module_logs.py).
    module_logs: tuple[str, ...] = ()
    module_log_retention_days: int = 7
    #: How long the metrics history keeps its minute, hour and day buckets (oqronkit.history).
    metrics_minute_retention_hours: int = 72
    metrics_hour_retention_days: int = 90
    metrics_day_retention_days: int = 730
    #: The code version a worker records as a deploy marker when it changes (None: the
    #: package's version, or the git commit of the working directory; oqronkit.history.deploys).
    version: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigurationError(
                f"OQRON mode {self.mode!r} is not one of {', '.join(MODES)}."
            )
        for name in ("project", "environment"):
            value = getattr(self, name)
            if not isinstance(value, str) or not _NAME.match(value):
                raise ConfigurationError(
                    f"OQRON {name} {value!r} must be 1-100 characters of letters, digits, "
                    "'.', '_' or '-', starting with a letter or digit (it is part of Redis "
                    "keys and row scopes)."
                )
        for flag in ("acknowledge_v1_layout", "allow_redis_eviction", "table_upkeep"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigurationError(f"OQRON {flag} must be True or False, got {getattr(self, flag)!r}.")
        for name in ("database_url", "redis_url"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ConfigurationError(f"OQRON {name} must be a URL string or None, got {type(value).__name__}.")
        for name in ("max_record_bytes", "run_log_limit", "run_timeline_limit"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigurationError(f"OQRON {name} must be a positive integer, got {value!r}.")
        wait = self.backend_wait
        if isinstance(wait, bool) or not isinstance(wait, int | float) or not math.isfinite(wait) \
                or not 0 < wait <= MAX_BACKEND_WAIT_S:
            raise ConfigurationError(
                f"OQRON backend_wait must be a number of seconds above 0 and at most "
                f"{MAX_BACKEND_WAIT_S:g}, got {wait!r}."
            )
        warn = self.horizon_warning_s
        if isinstance(warn, bool) or not isinstance(warn, int | float) or not math.isfinite(warn) or warn <= 0:
            raise ConfigurationError(f"OQRON horizon_warning_s must be a number of seconds above 0, got {warn!r}.")
        self._check_module_logs()
        self._check_metrics()
        self._check_urls()

    def _check_module_logs(self) -> None:
        given = self.module_logs
        if isinstance(given, str) or not isinstance(given, tuple | list) \
                or not all(isinstance(m, str) and m.strip().lower() in LOG_MODULE_NAMES for m in given):
            raise ConfigurationError(f"OQRON module_logs must be a list of {', '.join(LOG_MODULE_NAMES)} "
                                     f"(or 'all'), got {given!r}.")
        object.__setattr__(self, "module_logs", log_modules(given))
        days = self.module_log_retention_days
        if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= 3650:
            raise ConfigurationError(f"OQRON module_log_retention_days must be 1-3650, got {days!r}.")

    def _check_metrics(self) -> None:
        for name, most in (("metrics_minute_retention_hours", 24 * 365), ("metrics_hour_retention_days", 3650),
                           ("metrics_day_retention_days", 36500)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
                raise ConfigurationError(f"OQRON {name} must be 1-{most}, got {value!r}.")
        if self.version is not None and (not isinstance(self.version, str) or not 0 < len(self.version) <= 100):
            raise ConfigurationError(f"OQRON version must be 1-100 characters or None, got {self.version!r}.")

    def _check_urls(self) -> None:
        scheme = _NEEDS_DATABASE.get(self.mode)
        if scheme is not None:
            if not self.database_url:
                raise ConfigurationError(
                    f"OQRON mode {self.mode!r} needs a database URL "
                    f"(OQRON_DATABASE_URL={scheme}://...)."
                )
            if database_scheme(self.database_url) != scheme:
                raise ConfigurationError(
                    f"OQRON database URL {redact_url(self.database_url)!r} does not suit mode "
                    f"{self.mode!r}: expected a {scheme}:// URL."
                )
            if scheme == "sqlite":
                sqlite_path(self.database_url)
        redis_ok = self.redis_url is not None and self.redis_url.startswith(
            ("redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://"))
        if self.mode in ("redis", "redis-postgres") and not redis_ok:
            raise ConfigurationError(
                f"OQRON mode {self.mode!r} needs a Redis URL (OQRON_REDIS_URL=redis://host:6379/0, or "
                "redis+cluster://host:port,host:port for a Redis Cluster)."
            )
        if self.mode == "redis" and self.redis_url is not None and "+cluster://" in self.redis_url:
            # The durable store's scripts are not cluster-tested: only the hot plane is.
            raise ConfigurationError(
                "A Redis Cluster (redis+cluster://) serves the hot plane of mode 'redis-postgres'; "
                "mode 'redis' keeps its durable store on a single Redis."
            )

    def with_scope(self, *, project: str, environment: str) -> OqronConfig:
        """A copy for another (project, environment); validated like the original."""
        return replace(self, project=project, environment=environment)

    @property
    def sqlite_path(self) -> str:
        """The file path of a ``sqlite:///`` database URL."""
        if not self.database_url or database_scheme(self.database_url) != "sqlite":
            raise ConfigurationError("This configuration has no SQLite database URL.")
        return sqlite_path(self.database_url)


def log_modules(given: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The modules named (checked by the caller), aliases resolved, in LOG_MODULES order."""
    names = {m.strip().lower() for m in given}
    if "all" in names:
        return LOG_MODULES
    names = {"scheduler" if m in ("cron", "schedule") else m for m in names}
    return tuple(m for m in LOG_MODULES if m in names)


def database_scheme(url: str) -> str | None:
    """``sqlite``, ``postgresql`` or None for a database URL."""
    if url.startswith("sqlite:///"):
        return "sqlite"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql"
    return None


def sqlite_path(url: str) -> str:
    """``sqlite:///rel/path`` gives ``rel/path``; ``sqlite:////abs`` gives ``/abs``."""
    path = url[len("sqlite:///"):]
    if not path:
        raise ConfigurationError("The SQLite URL names no file: use sqlite:///path/to/file.")
    return path


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***``, for messages and banners."""
    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)


def config_from_mapping(settings: Mapping[str, Any], *, base: OqronConfig | None = None) -> OqronConfig:
    """Build a config from a mapping whose keys are field names in any case
    (``{"MODE": "postgres", "DATABASE_URL": ...}``); unknown keys are an error."""
    known = {f.name for f in fields(OqronConfig)}
    values: dict[str, Any] = {}
    for key, value in settings.items():
        name = key.lower()
        if name not in known:
            raise ConfigurationError(
                f"Unknown OQRON setting {key!r}; known settings: {', '.join(sorted(known))}."
            )
        values[name] = value
    if "mode" in values and "database_url" not in values and values["mode"] in ("memory", "redis"):
        values["database_url"] = None
    return replace(base, **values) if base is not None else OqronConfig(**values)


def config_from_env(environ: Mapping[str, str] | None = None, *, base: OqronConfig | None = None) -> OqronConfig:
    """Apply the ``OQRON_MODE``, ``OQRON_DATABASE_URL``, ``OQRON_REDIS_URL``,
    ``OQRON_PROJECT``, ``OQRON_ENVIRONMENT``, ``OQRON_BACKEND_WAIT`` and
    ``OQRON_MODULE_LOGS`` variables found in ``environ`` (the process environment when None)."""
    return config_from_mapping(settings_from_env(environ), base=base or OqronConfig())


def settings_from_env(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings the ``OQRON_*`` variables of ``environ`` give, by field name, not yet
    validated (:func:`config_from_mapping` does that)."""
    if environ is None:
        environ = os.environ
    overrides: dict[str, Any] = {field: environ[var] for var, field in _ENV_KEYS.items() if environ.get(var)}
    for field, var in (("backend_wait", "OQRON_BACKEND_WAIT"), ("horizon_warning_s", "OQRON_HORIZON_WARNING_S")):
        if field in overrides:
            text = overrides[field]
            try:
                overrides[field] = float(text)
            except ValueError:
                raise ConfigurationError(f"{var} must be a number of seconds, got {text!r}.") from None
    if "module_logs" in overrides:
        overrides["module_logs"] = tuple(m for m in overrides["module_logs"].split(",") if m.strip())
    return overrides


@dataclass(frozen=True, kw_only=True)
class WorkerEnvironment:
    """What a worker process takes from its command line and ``OQRON_*`` variables
    beyond the engine's settings; kept apart from :class:`OqronConfig` so the board's
    ``OQRON`` dict and its system check are unchanged by a worker-only variable."""

    #: "auto" pins the process to a free CPU, "off" never pins (worker/affinity.py).
    cpu_affinity: str = "auto"
    #: Where the per-CPU lock files live; None means the system's temporary directory.
    cpu_lock_dir: str | None = None
    #: The supervisor's slot for this child, where its search for a free CPU starts.
    worker_slot: int = 0
    #: Modules that declare queues, from ``OQRON_IMPORTS`` (after any ``--import``).
    imports: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.cpu_affinity not in CPU_AFFINITY_CHOICES:
            raise ConfigurationError(
                f"OQRON_CPU_AFFINITY must be one of {', '.join(CPU_AFFINITY_CHOICES)}, got {self.cpu_affinity!r}."
            )
        slot = self.worker_slot
        if not isinstance(slot, int) or isinstance(slot, bool) or slot < 0:
            raise ConfigurationError(f"{WORKER_SLOT_VAR} must be a non-negative integer, got {slot!r}.")


def cpu_affinity_setting(given: str) -> str:
    """``given`` ("auto" or "off" in any case, spaces around allowed), checked."""
    setting = given.strip().lower()
    if setting not in CPU_AFFINITY_CHOICES:
        raise ConfigurationError(
            f"OQRON_CPU_AFFINITY must be one of {', '.join(CPU_AFFINITY_CHOICES)}, got {given!r}."
        )
    return setting


def worker_environment(
    environ: Mapping[str, str] | None = None, *, cpu_affinity: str | None = None
) -> WorkerEnvironment:
    """A worker's settings from ``OQRON_CPU_AFFINITY``, ``OQRON_CPU_LOCK_DIR``,
    ``OQRON_WORKER_SLOT`` and ``OQRON_IMPORTS`` in ``environ`` (the process environment
    when None); ``cpu_affinity`` (``--cpu-affinity``) wins over the variable."""
    if environ is None:
        environ = os.environ
    slot_text = environ.get(WORKER_SLOT_VAR, "0") or "0"
    try:
        slot = int(slot_text)
    except ValueError:
        raise ConfigurationError(f"{WORKER_SLOT_VAR} must be a non-negative integer, got {slot_text!r}.") from None
    return WorkerEnvironment(
        cpu_affinity=cpu_affinity_setting(cpu_affinity or environ.get("OQRON_CPU_AFFINITY") or "auto"),
        cpu_lock_dir=environ.get("OQRON_CPU_LOCK_DIR") or None,
        worker_slot=slot,
        imports=tuple(m for m in environ.get("OQRON_IMPORTS", "").split(",") if m),
    )


def child_environment(slot: int) -> dict[str, str]:
    """This process's environment plus the supervisor ``slot`` for a child worker."""
    return {**os.environ, WORKER_SLOT_VAR: str(slot)}


def otel_provider_named(environ: Mapping[str, str] | None = None) -> bool:
    """Whether OpenTelemetry's own ``OTEL_PYTHON_TRACER_PROVIDER`` names a provider (its
    get_tracer_provider loads that one on first use)."""
    return "OTEL_PYTHON_TRACER_PROVIDER" in (os.environ if environ is None else environ)

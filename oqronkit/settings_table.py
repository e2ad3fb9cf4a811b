"""Every setting and environment variable that oqronkit, its Django integration and the board read.

The readers take their names from here (config.py's ``OQRON_*`` variables, the Django settings
read through ``oqronkit.contrib.django.conf.setting``), the reference pages are generated from
it (docs/reference/settings.md and environment.md), and tests/docs/test_reference.py fails when
the code reads a name this table lacks or the table lists a name no code reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Entry:
    """One name: its default as the reader sees it (text) and what it means."""

    name: str
    default: str
    meaning: str


#: The ``OQRON`` dict's keys (OqronConfig's fields, any case, plus ``DATABASE_ALIAS``) and the
#: ``OQRON_*`` variable that fills each when the dict leaves it out.
OQRON_KEYS: Final[dict[str, tuple[str | None, str]]] = {
    "MODE": ("OQRON_MODE", "`memory`, `sqlite`, `postgres`, `redis` or `redis-postgres`: where the hot and "
             "durable planes live"),
    "DATABASE_ALIAS": (None, "in Django: the `DATABASES` alias holding the engine's tables (SQLite for `sqlite`, "
                       "PostgreSQL 14+ for `postgres` and `redis-postgres`); `default` unless set"),
    "DATABASE_URL": ("OQRON_DATABASE_URL", "without Django only: `sqlite:///path` or "
                     "`postgresql://user:password@host:5432/db` (libpq parameters in the query)"),
    "REDIS_URL": ("OQRON_REDIS_URL", "`redis://`, `rediss://`, `unix://`, or `redis+cluster://host:port,...` for a "
                  "Redis Cluster; required by the Redis modes"),
    "PROJECT": ("OQRON_PROJECT", "the `project` column of every row and the Redis key prefix"),
    "ENVIRONMENT": ("OQRON_ENVIRONMENT", "the `environment` column of every row"),
    "MAX_RECORD_BYTES": (None, "the largest JSON record the engine stores; a larger run is stored without its "
                         "output, then logs, then input"),
    "ACKNOWLEDGE_V1_LAYOUT": (None, "start even though the database still has the v1 `oqron_kv` table"),
    "ALLOW_REDIS_EVICTION": (None, "start on a Redis whose `maxmemory-policy` may evict the engine's keys"),
    "RUN_LOG_LIMIT": (None, "log lines kept per run"),
    "RUN_TIMELINE_LIMIT": (None, "timeline entries kept per run"),
    "TABLE_UPKEEP": (None, "the leader runs `ANALYZE` / `VACUUM` on the PostgreSQL tables where autovacuum lags"),
    "BACKEND_WAIT": ("OQRON_BACKEND_WAIT", "seconds a call waits for an unreachable Postgres or Redis before it "
                     "raises `BackendUnavailable` (above 0, at most 300)"),
    "MODULE_LOGS": ("OQRON_MODULE_LOGS", "modules whose engine log records are kept (`queue`, `worker`, "
                    "`scheduler`, `topic`, `webhook`, `services`, `engine` or `all`; comma-separated in the "
                    "environment)"),
    "MODULE_LOG_RETENTION_DAYS": (None, "days a kept module log record lives"),
    "METRICS_MINUTE_RETENTION_HOURS": (None, "hours the metrics history keeps its per-minute buckets"),
    "METRICS_HOUR_RETENTION_DAYS": (None, "days the metrics history keeps its per-hour buckets"),
    "METRICS_DAY_RETENTION_DAYS": (None, "days the metrics history keeps its per-day buckets"),
    "VERSION": ("OQRON_VERSION", "the code version a worker records as a deploy marker when it changes (unset: "
                "the git commit of the working directory if `git` answers at once, else oqronkit's version)"),
    "HORIZON_WARNING_S": ("OQRON_HORIZON_WARNING_S", "seconds a PostgreSQL transaction may hold the xmin horizon "
                          "before the overview's Database health panel and `oqron_db_horizon_warning` warn "
                          "(above 0)"),
}

#: Django settings read with the environment variable of the same name as their fallback.
DJANGO_SETTINGS: Final[dict[str, Entry]] = {e.name: e for e in (
    Entry("OQRON_IMPORTS", "none", "modules `runworker` and the worker import besides the apps' `oqron.py` "
          "(a list, or comma-separated)"),
    Entry("OQRON_API_TOKENS", "none", "the JSON API's bearer tokens: `{token: holder}`, a holder being a username, "
          "`\"alice:shop/production:shop/*\"` or `{\"user\": ..., \"scopes\": [...]}`; `token=holder,...` in the "
          "environment; a token shorter than 20 characters never authenticates"),
    Entry("OQRON_METRICS_TOKEN", "none", "the bearer token Prometheus scrapes the board's `metrics` with"),
    Entry("OQRON_PRODUCTION_ENVIRONMENTS", "`production, prod, live`", "environments whose badge is red and where "
          "acting also needs `oqronboard.operate_production` (`[]`, or `-` in the environment, for none)"),
    Entry("OQRON_CONFIGURED_SCOPE_OPEN", "`True`", "every viewer sees the engine's own project/environment, and "
          "every operator acts in it, without a scope grant"),
    Entry("OQRON_INTERNAL_QUEUES", "none", "queues the overview leaves out (a list, or comma-separated)"),
    Entry("OQRON_BOARD_CACHE_SECONDS", "`2`", "how long every viewer's poll shares the figures that count "
          "every row (the overview's, a queue's job counts, the dead letters' depth and groups, the topics' lags, "
          "the plane drift; each page says when it read them, and any action reads them afresh; `0` turns the "
          "cache off), and how old the queue depths the leader keeps counted while a board reads them may be "
          "when a page takes them"),
    Entry("OQRON_BOARD_GROUPS", "`False`", "`migrate` creates the groups `viewers` and `operators` with the "
          "board's permissions"),
    Entry("OQRON_READ_DATABASE_ALIAS", "none", "the `DATABASES` alias of a read replica the board's list and "
          "detail pages read"),
    Entry("OQRON_READ_REPLICA_MAX_LAG_SECONDS", "`30`", "a replica further behind than this is not read"),
    Entry("OQRON_READ_REPLICA_CHECK_SECONDS", "`2`", "how often the replica's lag is measured"),
    Entry("OQRON_READ_PIN_SECONDS", "`5`", "after an operator's action, their pages read the primary this long"),
    Entry("OQRON_TRUSTED_PROXIES", "none", "reverse proxies (addresses or CIDR networks) whose "
          "`X-Forwarded-For` the login limiter believes"),
    Entry("OQRON_LOGIN_RATE_LIMIT", "`(10, 60)`", "login attempts for one username from one address per seconds "
          "(`10/60` in the environment)"),
    Entry("OQRON_LOGIN_ADDRESS_RATE_LIMIT", "`(30, 60)`", "login attempts from one address, whatever the "
          "usernames, per seconds (`30/60` in the environment)"),
)}

#: Django settings without an environment fallback.
DJANGO_ONLY_SETTINGS: Final[dict[str, Entry]] = {e.name: e for e in (
    Entry("OQRON", "`{}`", "the engine's configuration (its keys are listed above)"),
    Entry("OQRON_RATE_LIMIT", "none", "`{\"limiter\": RateLimiter, \"key\": callable}` for "
          "`oqronkit.ratelimit.django_view.RateLimitMiddleware`"),
    Entry("OQRON_PLAIN_HTTP", "`False`", "the project knowingly serves the board over plain HTTP in production; "
          "`check --deploy` warns (`oqron.security.W001`)"),
    Entry("OQRON_SETTINGS_PROBLEMS", "`[]`", "problems a settings module found in its environment, reported by "
          "`manage.py check` as `oqron.E010` (the standalone project fills it)"),
)}

#: Environment variables read only from the environment (the engine without Django, workers,
#: the standalone board project, the demo and the development scripts).
ENVIRONMENT: Final[dict[str, Entry]] = {e.name: e for e in (
    Entry("OQRON_CPU_AFFINITY", "`auto`", "a worker pins each process to a free CPU (`auto`) or never (`off`)"),
    Entry("OQRON_CPU_LOCK_DIR", "the system's temporary directory", "where the per-CPU lock files of pinned "
          "workers live"),
    Entry("OQRON_WORKER_SLOT", "`0`", "set by the worker supervisor for each child process: where its search "
          "for a free CPU starts"),
    Entry("OQRON_READ_DATABASE_URL", "none", "standalone board: the read replica's `postgresql://` URL"),
    Entry("OQRON_LOG_LEVEL", "`INFO`", "standalone board: the `oqronkit` logger's level"),
    Entry("OQRON_DEMO", "off", "standalone board: install the demo app (`bin/demo` sets it)"),
    Entry("DJANGO_SETTINGS_MODULE", "`oqronboard.settings`", "standalone board: Django's settings module"),
    Entry("DJANGO_DEBUG", "`1`", "standalone board: Django's `DEBUG`; set `0` in production"),
    Entry("DJANGO_SECRET_KEY", "a development key", "standalone board: Django's `SECRET_KEY`, required when "
          "`DJANGO_DEBUG=0`"),
    Entry("DJANGO_ALLOWED_HOSTS", "`127.0.0.1,localhost`", "standalone board: Django's `ALLOWED_HOSTS`, "
          "comma-separated"),
    Entry("DJANGO_PLAIN_HTTP", "`0`", "standalone board: serve plain HTTP with `DJANGO_DEBUG=0` (sets "
          "`OQRON_PLAIN_HTTP`)"),
    Entry("DJANGO_SECURE_HSTS_SECONDS", "a year over HTTPS, else `0`", "standalone board: `SECURE_HSTS_SECONDS`"),
    Entry("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", "on over HTTPS", "standalone board: "
          "`SECURE_HSTS_INCLUDE_SUBDOMAINS`"),
    Entry("DJANGO_SECURE_HSTS_PRELOAD", "on over HTTPS", "standalone board: `SECURE_HSTS_PRELOAD`"),
    Entry("DJANGO_SECURE_SSL_REDIRECT", "on over HTTPS", "standalone board: `SECURE_SSL_REDIRECT`"),
    Entry("DJANGO_SECURE_COOKIES", "on over HTTPS", "standalone board: `Secure` session and CSRF cookies"),
    Entry("DJANGO_SECURE_PROXY_SSL_HEADER", "`0`", "standalone board: trust `X-Forwarded-Proto: https` from a "
          "TLS-terminating proxy"),
    Entry("DJANGO_TASKS_LOG_LEVEL", "`INFO` with debug, else `WARNING`", "standalone board: the `django.tasks` "
          "logger's level"),
    Entry("OQRON_DEMO_ADDR", "`127.0.0.1:8000`", "`bin/demo`: the address the demo board serves on"),
    Entry("OQRON_DEMO_RECEIVER_PORT", "`8765`", "the demo's webhook receiver (`python -m demo.receiver`): its port"),
    Entry("OQRON_DOCS_ADDRESS", "`127.0.0.1:8000`", "`bin/docs`: the address the docs site serves on"),
    Entry("OQRON_CHROMIUM", "`/usr/bin/chromium`", "`bin/test` and the browser tests: the Chromium binary"),
    Entry("OQRON_TEST_DATABASE_URL", "`postgresql://postgres@127.0.0.1:5432/test`", "the tests' PostgreSQL"),
    Entry("OQRON_TEST_REDIS_URL", "`redis://127.0.0.1:6379/0`", "the tests' Redis"),
)}

#: ``OQRON_*`` variable -> OqronConfig field, for config.settings_from_env.
ENGINE_VARIABLES: Final[dict[str, str]] = {var: key.lower() for key, (var, _) in OQRON_KEYS.items() if var}


def django_setting(name: str) -> Entry:
    """The table's entry of a Django setting read with its environment fallback; a name the
    table lacks is a programming error (it would go undocumented)."""
    try:
        return DJANGO_SETTINGS[name]
    except KeyError:
        raise LookupError(f"{name} is not in oqronkit/settings_table.py's DJANGO_SETTINGS") from None

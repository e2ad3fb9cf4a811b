"""A realistic v1 ``oqron_kv`` data set, shared by the engine and board migration tests.

Two projects live in the namespace prefix (``shop/production``, ``blog/staging``) and
one row has no prefix (it belongs to the configured default scope). Dates are v1 Date
wrappers, as the v1 toolkit stored them.
"""

from __future__ import annotations

import json
from typing import Any

NEXT_RUN_ISO = "2025-07-04T03:00:00.000Z"
NEXT_RUN_MS = 1_751_598_000_000
LAST_RUN_ISO = "2025-07-03T03:00:00.000Z"
LAST_RUN_MS = 1_751_511_600_000
CREATED_ISO = "2025-07-03T10:00:00.000Z"
CREATED_MS = 1_751_536_800_000
DUE_ISO = "2025-07-05T12:00:00.000Z"
DUE_MS = 1_751_716_800_000


def date(iso: str) -> dict[str, str]:
    """A v1 Date wrapper."""
    return {"__type": "Date", "__val": iso}


def job(id: str, queue: str, status: str, **fields: Any) -> dict[str, Any]:
    """A v1 ``OqronJob`` record as the v1 toolkit stored it."""
    value: dict[str, Any] = {
        "id": id, "type": "task", "queueName": queue, "moduleName": queue, "status": status,
        "data": {"to": f"{id}@example.com"}, "opts": {"attempts": 3}, "attemptMade": 0,
        "progressPercent": 0, "logs": [], "timeline": [], "createdAt": date(CREATED_ISO),
    }
    value.update(fields)
    return value


def ns(project: str, environment: str, logical: str) -> str:
    return f"oqron:{project}:{environment}:{logical}"


SHOP = ("shop", "production")
BLOG = ("blog", "staging")
DEFAULT = ("default", "development")


Scope = tuple[str, str]


def v1_rows(shop: Scope = SHOP, blog: Scope = BLOG) -> list[tuple[str, str, dict[str, Any]]]:
    """(namespace, id, value) of every row of the v1 table; ``shop`` and ``blog`` name the
    two prefixed scopes (tests sharing a database pass fresh names)."""
    shop_jobs = ns(*shop, "jobs")
    return [
        (shop_jobs, "j-wait", job("j-wait", "emails", "waiting")),
        (shop_jobs, "j-delay", job("j-delay", "emails", "delayed", runAt=date(DUE_ISO))),
        (shop_jobs, "j-active", job(
            "j-active", "emails", "active", attemptMade=1, workerId="node-1",
            startedAt=date(CREATED_ISO), processedOn=date(CREATED_ISO),
        )),
        (shop_jobs, "j-failed", job(
            "j-failed", "emails", "failed", attemptMade=3, error="SMTP 550 mailbox unavailable",
            stacktrace=["Error: SMTP 550"], startedAt=date(CREATED_ISO), finishedAt=date(NEXT_RUN_ISO),
        )),
        (shop_jobs, "j-done", job(
            "j-done", "reports", "completed", attemptMade=1, returnValue={"rows": 42},
            progressPercent=100, startedAt=date(CREATED_ISO), finishedAt=date(DUE_ISO),
            logs=[{"ts": date(CREATED_ISO), "level": "info", "msg": "built"}],
        )),
        (shop_jobs, "fire-1", job(
            "fire-1", "system_cron", "completed", type="cron", scheduleId="nightly",
            moduleName="nightly", attemptMade=1, returnValue=None, startedAt=date(LAST_RUN_ISO),
            finishedAt=date(LAST_RUN_ISO),
        )),
        (ns(*shop, "cron_schedules"), "nightly", {
            "name": "nightly", "expression": "0 3 * * *", "timezone": "UTC", "type": "cron",
            "version": 2, "nextRunAt": date(NEXT_RUN_ISO), "lastRunAt": date(LAST_RUN_ISO),
            "paused": False, "runCount": 10, "successCount": 9, "failCount": 1, "lastStatus": "completed",
        }),
        (ns(*shop, "queue_instances"), "emails", {"version": 1, "enabled": False, "createdAt": date(CREATED_ISO)}),
        (ns(*shop, "cache_entries"), "users:1", {"value": {"name": "Ada"}, "expiresAt": date(DUE_ISO)}),
        (ns(*shop, "legacy_audit"), "a1", {"who": "ops", "at": date(CREATED_ISO)}),
        (ns(*blog, "jobs"), "b-wait", job("b-wait", "emails", "waiting")),
        (ns(*blog, "schedule_schedules"), "digest", {
            "name": "digest", "runAt": date(DUE_ISO), "nextRunAt": date(DUE_ISO), "lastRunAt": None,
            "paused": True,
        }),
        ("jobs", "d-wait", job("d-wait", "emails", "waiting")),
    ]


def expected_counts(
    shop: Scope = SHOP, blog: Scope = BLOG, default: Scope = DEFAULT
) -> dict[tuple[str, str, str], int]:
    """What :func:`v1_rows` becomes: (project, environment, kind) -> rows written."""
    return {
        (*shop, "job"): 3,          # waiting, delayed, active (now waiting)
        (*shop, "dlq"): 1,          # the failed job ...
        (*shop, "run"): 3,          # ... and its run, the completed job, the cron fire
        (*shop, "definition"): 1,   # cron "nightly"
        (*shop, "control"): 2,      # cron_durable "nightly", queue "emails"
        (*shop, "record"): 1,       # legacy_audit (unknown namespace, kept as is)
        (*blog, "job"): 1,
        (*blog, "definition"): 1,   # schedule "digest"
        (*blog, "control"): 1,      # schedule_durable "digest"
        (*default, "job"): 1,       # the unprefixed row
    }


EXPECTED_COUNTS = expected_counts()
EXPECTED_SKIPPED = {"hot-only in v2 (cache_entries)": 1}


def v1_rows_as_json(shop: Scope = SHOP, blog: Scope = BLOG) -> list[tuple[str, str, str]]:
    """The rows with their value as JSON text, as a SQL table holds them."""
    return [(namespace, id, json.dumps(value)) for namespace, id, value in v1_rows(shop, blog)]

"""The crons and schedules of oqron_records as the schedules pages show them: each
definition with its control state, its expression in words, time zone and next fires.
The pages themselves join the runs in (:mod:`oqronboard.views.schedules`)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from oqronboard.base.scope import BoardScope
from oqronkit import OqronError
from oqronkit.namespaces import CRON, SCHEDULE, SCHEDULER_CONTROL
from oqronkit.scheduler import Definition, preview

from .queries import records_of

KINDS = (CRON, SCHEDULE)
MAX_SCHEDULES = 500
PREVIEW_FIRES = 5
# A fire later than this is a missed slot to the scheduler (oqronkit.scheduler): the
# page counts such late runs over the last hour.
LATE_MS = 2000
LATE_WINDOW_MS = 3600 * 1000


def _url_names(kind: str) -> tuple[str, str]:
    """The history and action URL names of a kind (``cron-history``, ``cron-action``)."""
    return f"oqronboard:{kind}-history", f"oqronboard:{kind}-action"


def _urls(kind: str, name: str) -> dict[str, str | None]:
    """The page's links of a definition (any name: ``<seg:...>`` escapes what a path
    cannot carry as it is, such as a ``/``)."""
    history, action = _url_names(kind)
    return {"history_url": reverse(history, args=[name]), "pause_url": reverse(action, args=[name, "pause"]),
            "resume_url": reverse(action, args=[name, "resume"]),
            "run_now_url": reverse(action, args=[name, "run-now"])}


def _fires(definition: Definition) -> list[dict[str, str]]:
    """The next fires in the definition's time zone, for ``<time>`` tags."""
    return [{"iso": dt.isoformat(), "text": dt.strftime("%Y-%m-%d %H:%M:%S %Z")}
            for dt in preview(definition, PREVIEW_FIRES)]


def _row(kind: str, name: str, value: Any, control: Any, *, describe: bool = True) -> dict[str, Any]:
    """One definition as the page shows it; a record the engine cannot read shows its problem."""
    value = value if isinstance(value, dict) else {}
    control = control if isinstance(control, dict) else {}
    counters = control.get("counters") if isinstance(control.get("counters"), dict) else {}
    row: dict[str, Any] = {
        "kind": kind, "name": name, "description": value.get("description") or "", "timezone":
        value.get("timezone") or "UTC", "dynamic": bool(value.get("dynamic")), "handler": value.get("handler"),
        "as_job": bool(value.get("asJob")), "missed": value.get("missed"), "overlap": value.get("overlap"),
        "version": value.get("version"), "paused": bool(control.get("paused")), "done": bool(control.get("done")),
        "next_run_at": control.get("nextRunAt"), "last_run_id": control.get("lastRunId"),
        "last_fired_at": control.get("lastFiredAt"), "paused_at": control.get("pausedAt"),
        "pending": len(control.get("manual") or []),
        "counters": {k: counters.get(k, 0) for k in ("missed", "skipped", "run", "manual")},
        "fires": [], "problem": "", **_urls(kind, name),
    }
    row["actionable"] = bool(value) and row["pause_url"] is not None
    if not value:
        row["problem"] = "The definition record is gone (a finished dynamic schedule expires)."
        return row
    if not describe:  # the metrics scrape: ~1 ms a definition saved
        return row
    try:
        definition = Definition.from_record(value)
        description = row["description"] or definition.timing.describe()
        zone = f" ({definition.timezone})"  # the zone has a column of its own
        row["description"] = description[: -len(zone)] if description.endswith(zone) else description
        if not row["done"]:
            row["fires"] = _fires(definition)
    except (OqronError, KeyError, TypeError, ValueError) as exc:
        row["problem"] = f"Cannot read this definition: {exc}"
    return row


def schedule_rows(scope: BoardScope, *, limit: int = MAX_SCHEDULES, describe: bool = True
                  ) -> tuple[list[dict[str, Any]], bool]:
    """Every cron and schedule (at most ``limit``) with its control state, and whether
    the list was capped: one primary-key prefix read of four namespaces. Without
    ``describe``, no expression in words and no next fires."""
    namespaces = [*KINDS, *SCHEDULER_CONTROL.values()]
    records = (records_of(scope).filter(namespace__in=namespaces).order_by("namespace", "id")
               .values_list("namespace", "id", "value")[: 2 * limit + 1])
    found: dict[tuple[str, str], dict[str, Any]] = {}
    kind_of = {ns: kind for kind, ns in SCHEDULER_CONTROL.items()}
    for namespace, name, value in records:
        kind = kind_of.get(namespace, namespace)
        slot = found.setdefault((kind, name), {"value": None, "control": None})
        slot["control" if namespace in kind_of else "value"] = value
    capped = len(records) > 2 * limit or len(found) > limit
    rows = [_row(kind, name, parts["value"], parts["control"], describe=describe)
            for (kind, name), parts in sorted(found.items())[:limit]]
    return rows, capped


def definition_row(scope: BoardScope, kind: str, name: str) -> dict[str, Any] | None:
    """One definition and its control record (one primary-key read), None when neither exists."""
    records = records_of(scope).filter(namespace__in=[kind, SCHEDULER_CONTROL[kind]], id=name) \
        .values_list("namespace", "value")
    parts = dict(records)
    if not parts:
        return None
    return _row(kind, name, parts.get(kind), parts.get(SCHEDULER_CONTROL[kind]))

"""The run record: the receipt of one execution attempt, exactly the spec's shape
(camelCase keys, epoch ms), plus ``jobId`` / ``queue`` links for the board."""

from __future__ import annotations

import traceback
from collections.abc import Iterator, Mapping
from typing import Any, NotRequired, TypedDict, cast

from ..clock import now_ms
from ..codec import clean_text
from ..ids import new_id
from .shedding import trim_error

RUN_STATUSES = ("queued", "running", "completed", "failed", "cancelled", "held")


class ErrorValue(TypedDict):
    """An error as stored on runs and jobs (:func:`describe_error`). A job's errors also
    name their attempt and run; shedding may drop the traceback."""

    ts: int
    type: str
    message: str
    traceback: NotRequired[str]
    attempt: NotRequired[int]
    runId: NotRequired[str | None]


class LogLine(TypedDict):
    ts: int
    msg: str
    level: str


# Functional syntax: "from" is a keyword.
TimelineEntry = TypedDict("TimelineEntry", {"to": str, "ts": int, "from": str, "reason": str})


class RunValue(TypedDict):
    """The run record as stored in the ``runs`` namespace (the spec's shape). A leader's
    cron or schedule run also carries its claim (``claimId``, ``slotAt``, ...)."""

    id: str
    app: str
    logs: list[LogLine]
    name: str
    error: ErrorValue | None
    input: Any
    jobId: NotRequired[str]
    module: str
    output: Any
    status: str
    endedAt: int | None
    trigger: str
    attempts: int
    timeline: list[TimelineEntry]
    workerId: str
    startedAt: int
    durationMs: int | None
    environment: str
    correlationId: NotRequired[str]
    causedBy: NotRequired[str]
    progressPercent: float
    progressLabel: NotRequired[str | None]
    claimId: NotRequired[str]
    slotAt: NotRequired[int | None]
    definition: NotRequired[str]
    lateMs: NotRequired[int | None]
    queue: NotRequired[str]
    topic: NotRequired[str]  # a topic delivery's run: its topic, group and message
    group: NotRequired[str]
    messageId: NotRequired[str]
    webhook: NotRequired[str]  # a webhook delivery's run: its webhook, event and endpoint; the
    event: NotRequired[str]  # request and response are added by the delivery (ctx.annotate)
    endpointId: NotRequired[str]
    replayOf: NotRequired[str]  # a replay's run: the original run and its replay set (oqronkit.replay)
    replaySet: NotRequired[str]
    waitMs: NotRequired[int]  # a job's attempt: ms from its enqueue (or its due time) to its start
    batch: NotRequired[dict[str, Any]]  # a batch queue's attempt: {"id", "size"} of its handler call


def stored_run(value: dict[str, Any]) -> RunValue:
    """A run record read back from the durable plane, taken as the shape it was written in."""
    return cast(RunValue, value)


def new_run(
    *,
    name: str,
    module: str,
    trigger: str,
    input: Any,
    attempts: int,
    app: str,
    environment: str,
    worker_id: str,
    job_id: str | None = None,
    correlation_id: str | None = None,
    caused_by: str | None = None,
    started_at: int | None = None,
    wait_ms: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> RunValue:
    """A run record in state ``running`` with an opening timeline entry."""
    started = started_at if started_at is not None else now_ms()
    # Keys in jsonb's storage order (codec.jsonb_key_order), optional ones in place:
    # Postgres then skips sorting them on every run row it parses.
    run: dict[str, Any] = {"id": new_id(), "app": app, "logs": [], "name": name, "error": None, "input": input}
    if job_id is not None:
        run["jobId"] = job_id
    run["module"], run["output"], run["status"] = module, None, "running"
    if wait_ms is not None:  # a job's attempt: the metrics history's wait time
        run["waitMs"] = wait_ms
    run["endedAt"], run["trigger"], run["attempts"] = None, trigger, attempts
    if correlation_id is not None and caused_by is not None:  # its job's cause: the trace nests it there
        run["causedBy"] = caused_by
    run["timeline"] = [{"to": "running", "ts": started, "from": "waiting", "reason": f"attempt {attempts}"}]
    run["workerId"], run["startedAt"], run["durationMs"], run["environment"] = worker_id, started, None, environment
    if correlation_id is not None:
        run["correlationId"] = correlation_id
    run["progressPercent"] = 0
    if extra:
        run.update(extra)
    return cast(RunValue, run)  # built key by key above, for the key order


def finish_run(run: RunValue, status: str, *, output: Any = None, error: ErrorValue | None = None,
               reason: str | None = None, limit: int = 100, at: int | None = None) -> None:
    """Close a run: final status, output or error, end time, duration, timeline entry."""
    ended = at if at is not None else now_ms()
    add_timeline(run, run["status"], status, reason or status, limit=limit, at=ended)
    run["status"] = status
    run["output"] = output
    run["error"] = error
    run["endedAt"] = ended
    run["durationMs"] = max(ended - run["startedAt"], 0)
    if status == "completed":
        run["progressPercent"] = 100


def add_timeline(run: RunValue, from_: str, to: str, reason: str, *, limit: int, at: int | None = None) -> None:
    run["timeline"].append({"to": to, "ts": at if at is not None else now_ms(), "from": from_, "reason": reason})
    del run["timeline"][:-limit]


def add_log(run: RunValue, level: str, msg: str, *, limit: int) -> None:
    run["logs"].append({"ts": now_ms(), "msg": msg, "level": level})
    del run["logs"][:-limit]


#: What a run record can do without, in the order it is given up, when the durable plane
#: refuses the run as it is (over the record size limit, say).
SHEDDABLE_PARTS = ("output", "logs", "input")


def shed_parts(run: RunValue, problem: str) -> Iterator[RunValue]:
    """Copies of ``run`` without its output, then also its logs, then also its input,
    then with its error cut short too (message 500 characters, traceback the last
    2,000), each with a warning log line saying what was left out and why: the receipt
    of an attempt is kept even when what the handler produced cannot be. (A
    shedding.Shed.)"""
    shed: list[str] = []
    for part in (*SHEDDABLE_PARTS, "error detail"):
        shed.append(part)
        reduced = run.copy()
        for name in shed:
            if name == "error detail":
                reduced["error"] = trim_error(run.get("error"), message=500, traceback=2000)
            elif name == "logs":
                reduced["logs"] = []
            elif name == "output":
                reduced["output"] = None
            else:
                reduced["input"] = None
        note = f"run record not stored in full ({problem[:300]}); left out: {', '.join(shed)}"
        reduced["logs"] = [*reduced["logs"], {"ts": now_ms(), "msg": note, "level": "warning"}]
        yield reduced


def describe_error(exc: BaseException, *, kind: str | None = None) -> ErrorValue:
    """An error as stored on runs and jobs: type, message, traceback, time. Never raises
    and always storable: an exception whose ``__str__`` fails still gets a message, and
    NULs and lone surrogates a handler put in it are replaced (codec.clean_text)."""
    return {
        "ts": now_ms(),
        "type": clean_text(kind or type(exc).__name__),
        "message": clean_text(safe_str(exc) or type(exc).__name__),
        "traceback": clean_text(_format_traceback(exc))[-8000:],
    }


def safe_str(value: object) -> str:
    """``str(value)``, or a placeholder naming its type when that raises (handler code)."""
    try:
        text = str(value)
    except Exception as exc:  # anything a user's __str__ raises
        return f"<{type(value).__name__} whose str() raised {type(exc).__name__}>"
    return text if type(text) is str else str.__str__(text)  # a str subclass: its plain text


def safe_text(value: object) -> str:
    """What a handler passed as text (a log line, a progress label), always storable."""
    return clean_text(safe_str(value))


def _format_traceback(exc: BaseException) -> str:
    try:
        return "".join(traceback.format_exception(exc))
    except Exception:  # a broken exception object: keep what the frames say
        try:
            return "".join(traceback.format_tb(exc.__traceback__)) + f"{type(exc).__name__}: <unprintable>\n"
        except Exception:
            return ""

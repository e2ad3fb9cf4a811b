"""Writing a batch the durable plane refused for its content, not for an outage.

A record the plane will never take (a NUL PostgreSQL refuses, a lone surrogate, a record
over the size limit) is no outage: held for retry with its batch, it would hold back
every later write of the worker for ever. So the batch is written without it: first
with the records the facade itself refuses shed or left out, then, when the backend
refused something the facade let through, record by record.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from ..durable import DurablePlane, RecordWrite
from ..errors import InvalidRecord, RecordTooLarge
from ..namespaces import RUNS, is_dead_letters, job_namespace, queue_of
from ..queues.jobs import shed_error_detail
from ..queues.runs import shed_parts
from ..queues.shedding import write_shedding

logger = logging.getLogger(__name__)


def is_outage(exc: BaseException) -> bool:
    """Whether a failed durable write may succeed as it is later (held and retried):
    anything but a refusal of what was written. Refusals are ValueErrors and
    TypeErrors: InvalidRecord (a PostgreSQL DataError included), InvalidNamespace,
    RecordTooLarge, a driver's UnicodeEncodeError. An unknown error counts as an
    outage: holding a write is safe, leaving it out is not."""
    return not isinstance(exc, (ValueError, TypeError))


def apply_refusing(durable: DurablePlane, puts: list[RecordWrite], deletes: list[tuple[str, str]]) -> None:
    """``durable.apply(puts, deletes)``; when the plane refuses the batch for its
    content, the batch without what it refuses (each such record logged). A dead letter
    that cannot be stored keeps its job: the job's deletion is left out with it (it
    runs again rather than vanish). Raises only an outage (:func:`is_outage`)."""
    try:
        durable.apply(puts=puts, deletes=deletes)
        return
    except Exception as exc:
        if is_outage(exc):
            raise
    puts, kept = storable(durable, puts)
    deletes = [key for key in deletes if key not in kept]
    try:
        durable.apply(puts=puts, deletes=deletes)
        return
    except Exception as exc:
        if is_outage(exc):
            raise
        logger.error("the durable plane refused a batch its facade accepted; writing it record by record: %s",
                     exc, exc_info=exc, extra={"action": "finisher.unstorable"})
    kept = set()
    for write in puts:
        try:
            write_shedding(_alone(durable, write), write.value, _shed(write))
        except Exception as exc:
            if is_outage(exc):
                raise
            kept |= _left_out(write, exc)
    durable.apply(deletes=[key for key in deletes if key not in kept])


def _alone(durable: DurablePlane, write: RecordWrite) -> Callable[[Mapping[str, Any]], None]:
    """A writer of ``write`` on its own, turning any refusal into InvalidRecord (so
    that write_shedding tries it with less detail)."""
    def put(value: Mapping[str, Any]) -> None:
        try:
            durable.apply(puts=[write._replace(value=value)])
        except Exception as exc:
            if is_outage(exc) or isinstance(exc, (InvalidRecord, RecordTooLarge)):
                raise
            raise InvalidRecord(f"{write.namespace}/{write.id}: the durable plane refused it: {exc}") from exc
    return put


def storable(durable: DurablePlane, writes: list[RecordWrite]) -> tuple[list[RecordWrite], set[tuple[str, str]]]:
    """``writes`` checked one by one by the facade, and the jobs that must not be
    deleted now. A refused run is written without the parts it can do without
    (runs.shed_parts); a refused job or dead letter with less error detail
    (jobs.shed_error_detail). A job's running state, written behind only as a courtesy,
    is left out when it still cannot be stored."""

    def checked(write: RecordWrite) -> Callable[[Mapping[str, Any]], RecordWrite]:
        def check(value: Mapping[str, Any]) -> RecordWrite:
            candidate = write._replace(value=value)
            durable.check(candidate)
            return candidate
        return check

    out: list[RecordWrite] = []
    kept: set[tuple[str, str]] = set()
    for write in writes:
        try:
            out.append(write_shedding(checked(write), write.value, _shed(write)))
        except (InvalidRecord, RecordTooLarge, ValueError, TypeError) as exc:
            kept |= _left_out(write, exc)
    return out, kept


def _shed(write: RecordWrite) -> Any:
    return shed_parts if write.namespace == RUNS else shed_error_detail


def _left_out(write: RecordWrite, exc: BaseException) -> set[tuple[str, str]]:
    """Log a record left out of a batch; the job a dead letter keeps (as a set)."""
    logger.error("cannot be stored, left out: %s/%s: %s", write.namespace, write.id, exc,
                 extra={"action": "finisher.unstorable"})
    queue = queue_of(write.namespace)
    if queue is not None and is_dead_letters(write.namespace):
        return {(job_namespace(queue), write.id)}
    return set()

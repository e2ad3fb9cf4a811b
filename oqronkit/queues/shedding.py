"""Writing a record the durable plane refuses as it is (over the record size limit) with
less detail, rather than not at all: a run without its output, a job with shorter
errors. The shedding steps live with their records (runs.shed_parts,
jobs.shed_error_detail); this is the loop that tries them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..errors import InvalidRecord, RecordTooLarge

logger = logging.getLogger(__name__)

#: Reduced copies of a record of one shape (a RunValue, a JobValue), given the refusal.
type Shed[V: Mapping[str, Any]] = Callable[[V, str], Iterator[V]]


def write_shedding[T, V: Mapping[str, Any]](write: Callable[[V], T], value: V, shed: Shed[V]) -> T:
    """``write(value)``; when the durable plane refuses it (InvalidRecord,
    RecordTooLarge), ``write`` each reduced copy ``shed`` yields until one is taken.
    Raises the first refusal if none is."""
    try:
        return write(value)
    except (InvalidRecord, RecordTooLarge) as exc:
        problem = exc
    for reduced in shed(value, str(problem)):
        try:
            result = write(reduced)
        except (InvalidRecord, RecordTooLarge):
            continue
        logger.warning("stored with less detail: %s", problem, extra={"action": "record.shed"})
        return result
    raise problem


def trim_error(error: Any, *, message: int | None, traceback: int | None) -> Any:
    """A copy of a stored error (runs.describe_error's shape) with its message cut to
    ``message`` characters and its traceback to the last ``traceback`` (None: no
    message cut; no traceback at all)."""
    if not isinstance(error, dict):
        return error
    error = dict(error)
    if traceback is None:
        error.pop("traceback", None)
    elif isinstance(error.get("traceback"), str):
        error["traceback"] = error["traceback"][-traceback:]
    if message is not None and isinstance(error.get("message"), str):
        error["message"] = error["message"][:message]
    return error

"""``--log-format json``: one JSON object per log line, for log shippers.

Each line holds ``ts`` (ISO 8601, UTC, milliseconds), ``level``, ``logger``,
``message`` (the %-arguments applied), every ``extra`` field the call passed (the
engine's stable ``action`` among them), ``exception`` (the formatted traceback) when
there is one, and ``process`` / ``thread`` to tell workers and their threads apart.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

LOG_FORMATS = ("text", "json")
# Attributes every LogRecord has: whatever else a record carries came from ``extra``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON (non-JSON extras as their ``str()``)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace(
                "+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_") and key not in line:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        line["process"], line["thread"] = record.process, record.threadName
        return json.dumps(line, default=str, ensure_ascii=False)


def use_json_logs(logger_names: Iterable[str] = ("", "oqronkit", "django")) -> int:
    """Give every handler of these loggers (the root logger is ``""``) the JSON
    formatter; how many handlers it set."""
    formatter, count = JsonFormatter(), 0
    for name in logger_names:
        for handler in logging.getLogger(name).handlers:
            handler.setFormatter(formatter)
            count += 1
    return count

"""The JSON log formatter: one object per line with the ``extra`` fields and the
exception's traceback."""

from __future__ import annotations

import io
import json
import logging

from oqronkit.telemetry.json_logs import JsonFormatter


def test_a_record_with_extras_and_an_exception():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("oqronkit.test_json_logs")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("queue %s is %s", "mails", "late", extra={"action": "queue.late", "depth": 3, "odd": object()})
        try:
            raise ValueError("no\nmailbox")
        except ValueError:
            logger.exception("settling failed", extra={"action": "finisher.error"})
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "queue mails is late" and first["level"] == "WARNING"
    assert first["logger"] == "oqronkit.test_json_logs" and first["action"] == "queue.late" and first["depth"] == 3
    assert first["odd"].startswith("<object object") and "exception" not in first
    assert second["action"] == "finisher.error" and second["level"] == "ERROR"
    assert second["exception"].startswith("Traceback") and "ValueError: no\nmailbox" in second["exception"]
    assert "msg" not in first and "args" not in first  # LogRecord's own attributes stay out

"""Module logs: the engine's own log records of the modules a deployment turns on
(``OQRON["MODULE_LOGS"]``), kept in ``module_logs:<module>`` (kind ``log``).

A handler on the ``oqronkit`` logger only appends an entry to a bounded in-memory
buffer per module (the oldest dropped, and counted, past ``MAX_PENDING``); a background
thread writes the buffers in batches every ``FLUSH_INTERVAL`` seconds, each row with
``expires_at`` from ``module_log_retention_days`` (the leader's retention prunes them).
So no job waits on a log write. Records logged while writing (a durable-plane error)
are not kept, so an outage cannot feed itself.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict, deque
from typing import TYPE_CHECKING, Any

from .clock import now_ms
from .codec import clean_text
from .correlation import current as current_correlation
from .durable import RecordWrite
from .errors import OqronError
from .ids import new_id
from .namespaces import module_logs_namespace

if TYPE_CHECKING:
    from .durable import DurablePlane

FLUSH_INTERVAL = 1.0
MAX_PENDING = 10_000  # entries a module may hold between flushes
BATCH = 500
MAX_MESSAGE = 2_000
DAY_MS = 86_400_000
# An action's first word names its module; other records go by their logger's package.
_ACTION_MODULES = {
    "worker": "worker", "finisher": "worker", "supervisor": "worker", "heartbeat": "worker", "overlay": "worker",
    "runs": "worker", "scheduler": "scheduler", "queue": "queue", "topic": "topic", "webhook": "webhook",
    "services": "services", "rescuer": "services", "reconciler": "services", "retention": "services",
    "upkeep": "services",
}
_LOGGER_MODULES = (("oqronkit.worker", "worker"), ("oqronkit.scheduler", "scheduler"), ("oqronkit.topics", "topic"),
                   ("oqronkit.webhooks", "webhook"), ("oqronkit.services", "services"), ("oqronkit.queues", "queue"))
logger = logging.getLogger(__name__)


def module_of(record: logging.LogRecord) -> str:
    action = getattr(record, "action", None)
    if isinstance(action, str):
        found = _ACTION_MODULES.get(action.split(".", 1)[0])
        if found is not None:
            return found
    for prefix, module in _LOGGER_MODULES:
        if record.name == prefix or record.name.startswith(prefix + "."):
            return module
    return "engine"


def entry_of(record: logging.LogRecord, module: str) -> dict[str, Any]:
    """The stored value of one log record: its level, message, action and ids."""
    try:
        message = record.getMessage()
    except Exception:  # a bad format string must not cost the record
        message = str(record.msg)
    value: dict[str, Any] = {
        "at": int(record.created * 1000), "module": module, "level": record.levelname.lower(),
        "logger": record.name, "message": clean_text(message[:MAX_MESSAGE]),
    }
    for key in ("action", "queue", "service", "backend", "namespace"):
        found = getattr(record, key, None)
        if isinstance(found, str):
            value[key] = clean_text(found[:200])
    carried = current_correlation()  # logged inside a correlated handler: on that trace
    if carried is not None:
        value["correlationId"] = carried[0]
        if carried[1] is not None:
            value["runId"] = carried[1]
    if record.exc_info and record.exc_info[1] is not None:
        value["error"] = clean_text(f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"[:MAX_MESSAGE])
    return value


class ModuleLogHandler(logging.Handler):
    """Buffers the records of ``modules`` and writes them to ``durable`` in batches."""

    def __init__(self, durable: DurablePlane, modules: tuple[str, ...], *, retention_days: int) -> None:
        super().__init__(logging.INFO)
        self.durable = durable
        self.modules = frozenset(modules)
        self.retention_ms = retention_days * DAY_MS
        self.dropped: dict[str, int] = defaultdict(int)
        self._pending: dict[str, deque[dict[str, Any]]] = defaultdict(lambda: deque(maxlen=MAX_PENDING))
        self._buffer_lock = threading.Lock()
        self._stop = threading.Event()
        self._flusher = threading.Thread(target=self._run, name="oqron-module-logs", daemon=True)
        self._flusher.start()

    def emit(self, record: logging.LogRecord) -> None:
        if threading.current_thread() is self._flusher:
            return
        module = module_of(record)
        if module not in self.modules:
            return
        entry = entry_of(record, module)
        with self._buffer_lock:
            pending = self._pending[module]
            if len(pending) == MAX_PENDING:
                self.dropped[module] += 1
            pending.append(entry)

    def flush(self) -> None:
        """Write what is buffered (the flusher does every FLUSH_INTERVAL seconds)."""
        with self._buffer_lock:
            taken = {module: list(entries) for module, entries in self._pending.items() if entries}
            for module in taken:
                self._pending[module].clear()
        expires = now_ms() + self.retention_ms
        for module, entries in taken.items():
            namespace = module_logs_namespace(module)
            for start in range(0, len(entries), BATCH):
                writes = [RecordWrite(namespace, new_id(), entry, expires_at=expires)
                          for entry in entries[start:start + BATCH]]
                try:
                    self.durable.put_many(writes)
                except OqronError as exc:  # logged from the flusher: not kept, so no loop
                    logger.warning("could not keep %d %s log record(s): %s", len(writes), module, exc,
                                   extra={"action": "module_logs.write_failed"})

    def close(self) -> None:
        self._stop.set()
        if self._flusher.is_alive() and threading.current_thread() is not self._flusher:
            self._flusher.join(FLUSH_INTERVAL + 5)
        super().close()

    def _run(self) -> None:
        while not self._stop.wait(FLUSH_INTERVAL):
            self._flush_logged()
        self._flush_logged()

    def _flush_logged(self) -> None:
        try:
            self.flush()
        except Exception:  # the flusher never dies; the next interval tries again
            logger.exception("module log flush failed", extra={"action": "module_logs.flush_failed"})


def attach(durable: DurablePlane, modules: tuple[str, ...], *, retention_days: int) -> ModuleLogHandler:
    """A handler on the ``oqronkit`` logger keeping ``modules``' records (remove it with
    :func:`detach`): those the logger lets through (its level, INFO by default), INFO
    and above."""
    handler = ModuleLogHandler(durable, modules, retention_days=retention_days)
    logging.getLogger("oqronkit").addHandler(handler)
    return handler


def detach(handler: ModuleLogHandler) -> None:
    logging.getLogger("oqronkit").removeHandler(handler)
    handler.close()

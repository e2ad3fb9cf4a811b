"""The queue tests' engines (every mode) and worker helper, for topics."""

from tests.engine.queue.conftest import engine, mode, running, wait_until  # noqa: F401

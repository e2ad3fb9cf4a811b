"""The replay suite runs on the queue suite's engines (every mode with both planes)."""

from tests.engine.queue.conftest import engine, mode  # noqa: F401  (fixtures)

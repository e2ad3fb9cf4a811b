"""The queue tests' engines (every mode), for rate limiters."""

from tests.engine.queue.conftest import engine, mode  # noqa: F401

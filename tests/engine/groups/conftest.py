"""The queue tests' engines (every mode) for the group tests."""

from tests.engine.queue.conftest import engine, mode  # noqa: F401 - fixtures

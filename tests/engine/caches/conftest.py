from tests.engine.queue.conftest import engine, mode  # noqa: F401

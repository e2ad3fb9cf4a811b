"""The queue tests' engines (every mode) and worker helper, plus a local receiver."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.engine.queue.conftest import engine, mode, running, wait_until  # noqa: F401
from tests.receiver import Receiver, receiving

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
NEW_SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as found:
        yield found

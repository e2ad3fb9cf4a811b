"""The webhook of the real-process webhook tests (imported by ``python -m oqronkit worker``):
its endpoints are records the test adds; the receiver listens on 127.0.0.1."""

from __future__ import annotations

import oqronkit

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OPTIONS = {"secret": SECRET, "schedule": [0, 0.2], "retries": 50, "timeout": 2, "concurrency": 3,
           "breaker": {"failures": 3, "cooldown": 1, "max_cooldown": 1}}

hooks = oqronkit.webhook("hooks", **OPTIONS)

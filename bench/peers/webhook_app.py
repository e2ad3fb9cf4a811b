"""bench/webhooks.py's webhook, imported by the measured worker (``python -m oqronkit worker
--import webhook_app``): one webhook whose endpoint the harness adds (a local receiver)."""

from __future__ import annotations

import os

import oqronkit

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OPTIONS = {"secret": SECRET, "schedule": [0, 1], "timeout": 10, "allow_private": True,
           "concurrency": int(os.environ.get("BENCH_WH_CONCURRENCY", "20"))}

bench_hook = oqronkit.webhook("bench", **OPTIONS)

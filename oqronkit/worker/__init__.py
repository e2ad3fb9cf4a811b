"""The worker engine: claims jobs, runs handlers, records runs, settles outcomes."""

from __future__ import annotations

from .context import JobContext
from .process import WorkerProcess

__all__ = ["JobContext", "WorkerProcess"]

"""The board project's own ``oqron.py``: ``runworker`` imports it (autodiscovery, as
every installed app's), so a worker declares the dispatcher queue of each task queue
configured in ``TASKS`` and runs tasks like any other job."""

from __future__ import annotations

from .tasks import declare_configured_queues

declare_configured_queues()

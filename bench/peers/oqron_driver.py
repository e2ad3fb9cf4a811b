"""Producer for our engine: ``Queue.add`` (single) and ``Queue.add_bulk`` (bulk)."""

from __future__ import annotations

import oqron_tasks
from driver_cli import main

from oqronkit import get_engine


def warm_up() -> None:
    """Open both planes (schema check, pools) before anything is timed."""
    engine = get_engine()
    engine.durable  # noqa: B018
    engine.hot  # noqa: B018


if __name__ == "__main__":
    main(add_one=oqron_tasks.bench.add, add_many=oqron_tasks.bench.add_bulk, warm_up=warm_up)

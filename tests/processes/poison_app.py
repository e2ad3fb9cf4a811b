"""Queues for the poisoned-outcome tests (imported by ``python -m oqronkit worker``):
handlers whose outcome no durable plane stores as it is, and ordinary ones."""

from __future__ import annotations

import oqronkit


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ failed")


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


#: One slot: a slot thread that died used to stop the whole queue.
poison = oqronkit.queue("poison", concurrency=1, retries=0, lease=5.0)


@poison.handler
def poison_job(ctx):
    kind = ctx.data["kind"]
    if kind == "nul":
        return {"s": "a\x00b"}
    if kind == "surrogate":
        return {"s": "\ud800"}
    if kind == "deep":
        return {"v": _nested(5_000)}
    if kind == "unprintable":
        raise Unprintable()
    return {"n": ctx.data["n"]}

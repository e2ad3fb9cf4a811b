"""Appending to and reading a partitioned log (a topic's retained messages) on Redis.

An append WATCHes the hash holding the partition's counter row, reads the counter and
the ids already appended, then writes the rows, the counter and the partition's offset
index in one MULTI: a concurrent append makes EXEC fail and this one starts over, so
offsets are taken once and commit in order. The offset index is a sorted set per
(namespace, partition), member id, score offset; a member whose row was deleted (by
retention) is dropped the next time a read meets it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import redis
from redis.commands.core import Script
from redis.exceptions import WatchError

from ...errors import BackendUnavailable
from ..types import EncodedRow, LogAppend, Scope, StoredRecord
from .keys import durable_base
from .rows import decode_row

APPEND_ATTEMPTS = 200
#: Keys (rows hash first) of a (scope, table, namespace), and durable_write's (keys, args) of puts.
KeysOf = Callable[[Scope, str, str], list[str]]
PutArgs = Callable[[Scope, Sequence[EncodedRow]], tuple[list[str], list[str]]]


def offset_index(scope: Scope, namespace: str, partition: int) -> str:
    return f"{durable_base(scope)}log:{namespace}:{partition}"


def append_log(client: redis.Redis, write: Script, keys_of: KeysOf, put_args: PutArgs, scope: Scope,
               append: LogAppend) -> dict[str, int]:
    counter_rows = keys_of(scope, append.counter_table, append.counter_namespace)[0]
    log_rows = keys_of(scope, append.table, append.namespace)[0]
    ids = list(dict.fromkeys(append.ids))
    lookup = ids if append.maybe_present is None else list(dict.fromkeys(append.maybe_present))
    for attempt in range(APPEND_ATTEMPTS):
        with client.pipeline() as pipe:
            try:
                pipe.watch(counter_rows)  # type: ignore[no-untyped-call]  # untyped in redis-py
                raw = cast("str | None", pipe.hget(counter_rows, append.counter_id))
                first: int = decode_row(append.counter_namespace, append.counter_id, raw).value["next"] if raw else 0
                found = cast("list[str | None]", pipe.hmget(log_rows, lookup)) if lookup else []
                offsets = {id: decode_row(append.namespace, id, r).value["offset"]
                           for id, r in zip(lookup, found, strict=True) if r is not None}
                new = [id for id in ids if id not in offsets]
                if not new:
                    pipe.unwatch()
                    return offsets
                rows = append.build(new, first)
                keys, args = put_args(scope, [*rows, append.counter(first + len(new))])
                pipe.multi()
                write(keys=keys, args=args, client=pipe)
                pipe.zadd(offset_index(scope, append.namespace, append.partition),
                          {id: first + i for i, id in enumerate(new)})
                pipe.execute()
            except WatchError:
                time.sleep(min(0.001 * attempt, 0.05))
                continue
        offsets.update((id, first + i) for i, id in enumerate(new))
        return offsets
    raise BackendUnavailable(f"append to {append.namespace} lost {APPEND_ATTEMPTS} races in a row.")


def read_log(client: redis.Redis, keys_of: KeysOf, scope: Scope, table: str, namespace: str, partition: int,
             after: int, limit: int) -> list[StoredRecord]:
    index, rows_key = offset_index(scope, namespace, partition), keys_of(scope, table, namespace)[0]
    records: list[StoredRecord] = []
    while len(records) < limit:
        want = limit - len(records)
        members = cast("list[tuple[str, float]]", client.zrangebyscore(
            index, f"({after}", "+inf", start=0, num=want, withscores=True))
        if not members:
            break
        found = cast("list[str | None]", client.hmget(rows_key, [id for id, _ in members]))
        gone = [id for (id, _), raw in zip(members, found, strict=True) if raw is None]
        if gone:  # pruned rows: forget them, so later reads skip them for free
            client.zrem(index, *gone)
        records += [decode_row(namespace, id, raw) for (id, _), raw in zip(members, found, strict=True)
                    if raw is not None]
        if len(members) < want:
            break
        after = int(members[-1][1])
    return sorted(records, key=_offset)


def _offset(record: StoredRecord) -> Any:
    return record.value["offset"]

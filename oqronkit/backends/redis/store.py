"""Redis durable store: the ``redis`` mode's three tables as hashes and sorted sets.

Per (scope, table, namespace): a hash of rows (value plus metadata, see :mod:`.rows`)
and score-0 sorted sets used as keyset indexes: ``ins`` (inserted order), ``st``
(``startedAt`` order, rows with a numeric ``startedAt`` only), and per value of each
filter field (status, name, module) one index in each order. Per (scope, table): a hash
of namespace -> kind (kind listings and counts) and an ``exp`` sorted set by
``expires_at`` (prune_expired). Every write goes through ``lua/durable_write.lua``, so a
row and its index entries change together, and put_many, apply, insert_many and each
compare-and-set step are atomic. A scope's durable keys share one hash tag (one Cluster
slot) because apply() may span every namespace.

Costs to know: a listing walks one index from its cursor (ZRANGEBYLEX): the index of
its status filter, else of its name, else of its module, else the plain order index.
Further filters (a second field, a started window on an inserted-order listing) are
applied in Python while walking in pages of :data:`SCAN_PAGE` rows, so only they can
make a listing read rows it does not return. Listing a kind reads up to one page per
namespace of that kind and merges them. The board needs SQL (``supports_sql = False``).
"""

from __future__ import annotations

import builtins
import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from ...config import redact_url
from ...errors import BackendUnavailable, DuplicateRecord
from ..fields import FieldsOfWholeRows
from ..hot_types import Signal
from ..matching import fields_match, matches_query
from ..types import EncodedRow, ListQuery, LogAppend, Scope, StoredRecord, _Absent
from . import log
from .claim_read import RedisClaimReads
from .connection import (
    CONNECT_TIMEOUT_S,
    READ_RETRIES,
    SOCKET_TIMEOUT_S,
    call,
    check_eviction_policy,
    not_run_retry,
    open_client,
    read_retry,
)
from .hot import signals_json
from .keys import durable_base, queue_prefix
from .rows import (
    FILTER_FIELDS,
    KEY_WIDTH,
    Batch,
    decode_row,
    encode_row,
    filter_index,
    inserted_key,
    listing_bounds,
    row_json,
    split_expiry_member,
)
from .scripts import Scripts

T = TypeVar("T")

#: Rows read per round trip while a filtered listing walks an index.
SCAN_PAGE = 500
#: Expired rows deleted per script call by prune_expired.
PRUNE_BATCH = 1000
#: compare_and_set retries its atomic swap while other writers keep changing the row.
CAS_ATTEMPTS = 100

class RedisDurableStore(RedisClaimReads, FieldsOfWholeRows):
    """Durable store on Redis (``redis`` mode). Building one never touches the network."""

    name = "redis"
    supports_sql = False
    transaction_domain: str | None = None
    joins_database: str | None = None
    #: The server's URL: the hot plane on it is signalled in an insert's own script
    #: (insert_and_signal) and claimed with a read (claim_and_read). A Redis Cluster URL
    #: never gets here (open_client).
    signal_domain: str | None

    def __init__(
        self,
        url: str,
        *,
        check_eviction: bool = True,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        socket_timeout: float = SOCKET_TIMEOUT_S,
        read_retries: int = READ_RETRIES,
    ) -> None:
        self._where = redact_url(url)
        self.signal_domain = url
        self._check_eviction = check_eviction
        self._client = open_client(url, connect_timeout=connect_timeout, socket_timeout=socket_timeout)
        self._scripts = Scripts(self._client, ("durable_write", "durable_page", "insert_and_signal", "claim_and_read"))
        self._retry, self._not_run = read_retry(read_retries), not_run_retry(read_retries)
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------

    def ensure_schema(self) -> None:
        """Nothing to create; check the eviction policy (an evicted row is lost data)
        and load the scripts."""
        def start() -> None:
            check_eviction_policy(self._client, self._where, enforce=self._check_eviction)
            self._scripts.load_all()

        self._call("ensure_schema", start, retry=True)

    def has_table(self, table: str) -> bool:
        return False  # no SQL tables here, so no v1 oqron_kv table either

    def close(self) -> None:
        self._closed = True
        # Idle connections only: a call still in flight on another thread finishes (its
        # reply is already on the way) rather than failing under it; its connection is
        # closed when the pool is collected.
        self._client.connection_pool.disconnect(inuse_connections=False)

    # -- writes ----------------------------------------------------------------------

    def put_many(self, scope: Scope, rows: Sequence[EncodedRow]) -> None:
        self.apply(scope, rows, ())

    def apply(
        self, scope: Scope, puts: Sequence[EncodedRow], deletes: Sequence[tuple[str, str, str]]
    ) -> None:
        batch = Batch()
        for row in puts:  # puts first, then deletes, as the other backends do
            batch.add(row.table, row.namespace, row.kind, "P", row.id, encode_row(row))
        for table, namespace, id in deletes:
            batch.add(table, namespace, "", "D", id)
        # Upserting the same rows and deleting the same keys again changes nothing.
        self._write(scope, batch, retry=True)

    def insert_many(self, scope: Scope, rows: Sequence[EncodedRow]) -> set[tuple[str, str]]:
        batch = Batch()
        for row in rows:
            batch.add(row.table, row.namespace, row.kind, "N", row.id, encode_row(row))
        return {ref for ref, done in zip(batch.refs(), self._write(scope, batch), strict=True) if done}

    def insert_and_signal(self, scope: Scope, rows: Sequence[EncodedRow], queue: str, signals: Sequence[Signal],
                          now: int) -> None:
        """Insert fresh ``rows`` and, only if every id was free, signal ``signals`` (of those
        rows: none is in the queue's sets yet) of ``queue`` on this server's hot plane: one
        script, one round trip. A taken id raises DuplicateRecord, nothing written or signalled."""
        batch = Batch()
        for row in rows:  # each a fresh insert: a taken id stops the batch (the script's 'F')
            batch.add(row.table, row.namespace, row.kind, "F", row.id, encode_row(row))
        args: list[Any] = [durable_base(scope), queue_prefix(scope, queue), now, signals_json(signals)]
        for (table, namespace), (kinds, ops) in batch.groups.items():
            args += [table, namespace, kinds[-1], len(ops), *(part for op in ops for part in op[1:3])]  # id, row
        # Not retried: a lost reply after the insert would make the retry see its own row as taken.
        done = self._script("insert_and_signal", (), args)
        if all(done):
            return
        results = dict(zip(batch.refs(), done, strict=True))
        undo = Batch()  # the rows before the taken one: their ids are fresh, nothing refers to them
        for row in rows:
            if results[(row.namespace, row.id)]:
                undo.add(row.table, row.namespace, "", "D", row.id)
        self._write(scope, undo, retry=True)
        raise DuplicateRecord("a new record's id was taken; nothing was written or signalled.")

    def insert_guarded(self, scope: Scope, guard: EncodedRow, rows: Sequence[EncodedRow]) -> bool:
        batch = Batch()  # the guard's op comes first: a taken guard ('F') stops the rest
        for code, row in [("F", guard), *(("P", r) for r in rows)]:
            batch.add(row.table, row.namespace, row.kind, code, row.id, encode_row(row))
        return bool(self._write(scope, batch)[0])

    def insert_new(self, scope: Scope, table: str, rows: Iterable[EncodedRow]) -> None:
        rows = list(rows)
        inserted = self.insert_many(scope, rows)
        if len(inserted) == len(rows):
            return
        # Undo this batch's rows: their ids are fresh, so nothing else refers to them.
        undo = Batch()
        for row in rows:
            if (row.namespace, row.id) in inserted:
                undo.add(row.table, row.namespace, "", "D", row.id)
        self._write(scope, undo, retry=True)
        taken = next(row for row in rows if (row.namespace, row.id) not in inserted)
        raise DuplicateRecord(f"{taken.namespace}/{taken.id} already exists; nothing of the batch was written.")

    def delete_many(self, scope: Scope, table: str, namespace: str, ids: Sequence[str]) -> int:
        batch = Batch()
        for id in dict.fromkeys(ids):
            batch.add(table, namespace, "", "D", id)
        return sum(self._write(scope, batch))

    def compare_and_set(
        self,
        scope: Scope,
        table: str,
        namespace: str,
        id: str,
        expect: Mapping[str, Any] | _Absent,
        row: EncodedRow | None,
    ) -> bool:
        rows_key = self._keys(scope, table, namespace)[0]
        if isinstance(expect, _Absent):
            if row is None:  # "delete if absent" changes nothing; it only checks
                return not self._call("compare_and_set", lambda: self._client.hexists(rows_key, id), retry=True)
            batch = Batch()
            batch.add(table, namespace, row.kind, "N", id, encode_row(row))
            return bool(self._write(scope, batch)[0])
        # Compare in Python (fields_match: the semantics of every backend), then swap in
        # Lua only if the row is still byte for byte what was compared; a row changed in
        # between is read and compared again.
        for _attempt in range(CAS_ATTEMPTS):
            # Replies are str (open_client decodes them); redis-py's types say bytes | str.
            raw = self._call("compare_and_set", lambda: cast("str | None", self._client.hget(rows_key, id)),
                             retry=True)
            if raw is None or not fields_match(json.loads(row_json(raw)), expect):
                return False
            batch = Batch()
            if row is None:
                batch.add(table, namespace, "", "S", id, "", raw)
            else:
                batch.add(table, namespace, row.kind, "S", id, encode_row(row), raw)
            if self._write(scope, batch)[0]:
                return True
        raise BackendUnavailable(
            f"compare_and_set on {namespace}/{id} lost {CAS_ATTEMPTS} races in a row at {self._where}."
        )

    def append_log(self, scope: Scope, append: LogAppend) -> dict[str, int]:
        return self._call("append_log", lambda: log.append_log(  # a retry keeps the offsets already taken
            self._client, self._scripts["durable_write"], self._keys, self._put_args, scope, append), retry=True)

    # -- reads -----------------------------------------------------------------------

    def read_log(self, scope: Scope, table: str, namespace: str, partition: int, after: int,
                 limit: int) -> builtins.list[StoredRecord]:
        return self._call("read_log", lambda: log.read_log(self._client, self._keys, scope, table, namespace,
                                                           partition, after, limit), retry=True)

    def get_many(self, scope: Scope, table: str, namespace: str, ids: Sequence[str]) -> list[StoredRecord]:
        wanted = list(dict.fromkeys(ids))
        rows_key = self._keys(scope, table, namespace)[0]
        found = self._call("get_many", lambda: cast("list[str | None]", self._client.hmget(rows_key, wanted)),
                           retry=True)
        return [decode_row(namespace, id, raw) for id, raw in zip(wanted, found, strict=True) if raw is not None]

    def scan_statuses(
        self, scope: Scope, table: str, namespace: str, statuses: Sequence[str], cursor: str | None, limit: int
    ) -> tuple[list[tuple[str, str]], str | None]:
        # HSCAN's own cursor over the namespace's row hash: no sort, and it survives
        # writes during the walk (which may return a row twice, never skip one).
        rows_key = self._keys(scope, table, namespace)[0]
        next_cursor, raw = self._call("scan_statuses", lambda: cast("tuple[int, dict[str, str]]", self._client.hscan(
            rows_key, cursor=int(cursor or 0), count=limit)), retry=True)
        wanted = set(statuses)
        found = [(id, status) for id, blob in raw.items()
                 if (status := decode_row(namespace, id, blob).value.get("status")) in wanted]
        return found, (str(next_cursor) if int(next_cursor) else None)

    def list(self, scope: Scope, query: ListQuery) -> list[StoredRecord]:
        found: list[StoredRecord] = []
        for namespace in self._namespaces(scope, query.table, query.namespace, query.kind):
            found += self._scan(scope, query, namespace)
        return matches_query(found, query)  # merges namespaces and cuts to the limit

    def count(self, scope: Scope, table: str, *, namespace: str | None, kind: str | None) -> int:
        return sum(self._counts(scope, table, namespace, kind).values())

    def count_by_namespace(self, scope: Scope, table: str, kind: str) -> dict[str, int]:
        return {ns: n for ns, n in self._counts(scope, table, None, kind).items() if n}

    # -- retention -------------------------------------------------------------------

    def prune_expired(self, scope: Scope, table: str, now_ms: int) -> int:
        exp_key = self._keys(scope, table, "")[4]
        total = 0
        while True:
            members = self._call("prune_expired", lambda: cast("list[str]", self._client.zrangebyscore(
                exp_key, "-inf", now_ms, start=0, num=PRUNE_BATCH)), retry=True)
            batch = Batch()
            for member in members:
                namespace, id = split_expiry_member(member)
                # X re-checks the row's expiry in the script: a row renewed meanwhile stays.
                batch.add(table, namespace, "", "X", id, str(now_ms))
            if members:
                total += sum(self._write(scope, batch))
            if len(members) < PRUNE_BATCH:
                return total

    def prune_older_than(
        self, scope: Scope, table: str, namespace: str, cutoff_ms: int, *, limit: int
    ) -> int:
        if limit <= 0:
            return 0
        ins_key = self._keys(scope, table, namespace)[1]
        cutoff = inserted_key(cutoff_ms)
        members = self._call("prune_older_than", lambda: cast("list[str]", self._client.zrangebylex(
            ins_key, "-", "(" + cutoff, start=0, num=limit)), retry=True)
        batch = Batch()
        for member in members:
            # O re-checks in the script, so a row re-inserted meanwhile (newer) stays.
            batch.add(table, namespace, "", "O", member[KEY_WIDTH:], cutoff)
        return sum(self._write(scope, batch)) if members else 0

    # -- listing helpers -------------------------------------------------------------

    def _namespaces(self, scope: Scope, table: str, namespace: str | None, kind: str | None) -> builtins.list[str]:
        """The namespaces a listing or count covers, from the namespace registry."""
        nsk = self._keys(scope, table, "")[3]
        if namespace is not None:
            if kind is None:
                return [namespace]
            stored = self._call("namespaces", lambda: self._client.hget(nsk, namespace), retry=True)
            return [namespace] if stored == kind else []
        registry = self._call("namespaces", lambda: cast("dict[str, str]", self._client.hgetall(nsk)), retry=True)
        return sorted(ns for ns, k in registry.items() if kind is None or k == kind)

    def _counts(self, scope: Scope, table: str, namespace: str | None, kind: str | None) -> dict[str, int]:
        names = self._namespaces(scope, table, namespace, kind)
        if not names:
            return {}
        keys = [self._keys(scope, table, ns)[0] for ns in names]

        def lengths() -> list[int]:
            pipe = self._client.pipeline(transaction=False)
            for key in keys:
                pipe.hlen(key)
            return pipe.execute()

        return dict(zip(names, self._call("count", lengths, retry=True), strict=True))

    def _scan(self, scope: Scope, query: ListQuery, namespace: str) -> builtins.list[StoredRecord]:
        """Up to ``query.limit`` matching rows of one namespace, in listing order,
        walking its index page by page from the cursor."""
        keys = self._keys(scope, query.table, namespace)
        index = keys[2] if query.order == "started" else keys[1]
        wanted = [(field, v) for field in FILTER_FIELDS if (v := getattr(query, field)) is not None]
        if wanted:  # the first filter's own index holds only rows that pass it
            field, value = wanted[0]
            index = filter_index(durable_base(scope), query.table, query.order, field, namespace, value)
        lo, hi = listing_bounds(query)
        filtered = len(wanted) > 1 or query.correlation is not None or (
            query.order == "inserted" and (query.started_from is not None or query.started_to is not None))
        page = SCAN_PAGE if filtered else min(query.limit, SCAN_PAGE)
        direction = "desc" if query.descending else "asc"
        page_query = dataclasses.replace(query, limit=page)
        found: list[StoredRecord] = []
        while True:
            flat = self._script("durable_page", [index, keys[0]], [direction, lo, hi, page], retry=True)
            members = flat[::2]
            records = [decode_row(namespace, m[KEY_WIDTH:], raw) for m, raw in zip(members, flat[1::2],
                                                                                   strict=True) if raw]
            found += matches_query(records, page_query)  # the page's matches, still in order
            if len(found) >= query.limit or len(members) < page:
                return found[:query.limit]
            if query.descending:
                hi = "(" + members[-1]
            else:
                lo = "(" + members[-1]

    # -- calls -----------------------------------------------------------------------

    def _keys(self, scope: Scope, table: str, namespace: str) -> builtins.list[str]:
        """rows, ins, st (per namespace), nsk, exp (per table): durable_write's five."""
        base = durable_base(scope)
        return [f"{base}rows:{table}:{namespace}", f"{base}ins:{table}:{namespace}",
                f"{base}st:{table}:{namespace}", f"{base}nsk:{table}", f"{base}exp:{table}"]

    def _put_args(self, scope: Scope, rows: Sequence[EncodedRow]) -> tuple[builtins.list[str], builtins.list[str]]:
        batch = Batch()
        for row in rows:
            batch.add(row.table, row.namespace, row.kind, "P", row.id, encode_row(row))
        return self._args(scope, batch)

    def _write(self, scope: Scope, batch: Batch, *, retry: bool = False) -> builtins.list[int]:
        if not batch.groups:
            return []
        keys, args = self._args(scope, batch)
        done: list[int] = self._script("durable_write", keys, args, retry=retry)
        return done

    def _args(self, scope: Scope, batch: Batch) -> tuple[builtins.list[str], builtins.list[str]]:
        keys: list[str] = []
        args: list[str] = [durable_base(scope)]
        for (table, namespace), (kinds, ops) in batch.groups.items():
            keys += self._keys(scope, table, namespace)
            args += [table, namespace, kinds[-1] if kinds else "", str(len(ops))]
            for op in ops:
                args += op
        return keys, args

    def _script(self, name: str, keys: Sequence[str], args: Sequence[Any], *, retry: bool = False) -> Any:
        script = self._scripts[name]
        return self._call(name, lambda: script(keys=keys, args=args), retry=retry)

    def _call(self, action: str, fn: Callable[[], T], *, retry: bool = False) -> T:
        if self._closed:
            raise BackendUnavailable(f"The Redis durable store for {self._where} is closed.")
        return call(self._where, action, fn, self._retry if retry else None)


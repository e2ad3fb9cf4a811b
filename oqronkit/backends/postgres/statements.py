"""The PostgreSQL store's statements: named queries from ``sql/queries.sql`` with the
table identifier filled in, and the list / count statements composed from fixed
fragments. No value is ever formatted into SQL text; values travel as parameters."""

from __future__ import annotations

import math
import re
from functools import cache, lru_cache
from typing import Any

from psycopg import sql

from ...errors import InvalidNamespace
from ...namespaces import TABLE_NAMES, sole_namespace_of_kind
from ..sqlfiles import load_queries, load_sql
from ..types import EncodedRow, ListQuery, Scope
from .arrays import BigintArray, TextArray

_PACKAGE = "oqronkit.backends.postgres"
QUERIES = load_queries(_PACKAGE, "sql/queries.sql")
SCHEMA = load_sql(_PACKAGE, "sql/schema.sql")
#: Every relation schema.sql creates, and every statistics object (not a relation, so
#: looked up apart); ensure_schema skips the script (and its locks) when all of them
#: already resolve, which is the common case on every start.
SCHEMA_OBJECTS: tuple[str, ...] = tuple(re.findall(r"(?:TABLE|INDEX) IF NOT EXISTS\s+(\w+)", SCHEMA))
SCHEMA_STATISTICS: tuple[str, ...] = tuple(re.findall(r"STATISTICS IF NOT EXISTS\s+(\w+)", SCHEMA))
RETIRED_OBJECTS: tuple[str, ...] = tuple(re.findall(r"DROP INDEX IF EXISTS\s+(\w+)", SCHEMA))
#: The optional trigram index of the dead letters' text search (needs pg_trgm).
SEARCH_SCHEMA = load_queries(_PACKAGE, "sql/search_schema.sql")
SEARCH_INDEX: str = re.findall(r"INDEX IF NOT EXISTS\s+(\w+)", SEARCH_SCHEMA["search_index"])[0]


# Looked up by any str: a caller's table key is checked here, not trusted.
_TABLE_NAMES: dict[str, str] = {key: name for key, name in TABLE_NAMES.items()}


def table_identifier(table: str) -> sql.Identifier:
    """The SQL identifier of a table key, checked against the three spec tables."""
    name = _TABLE_NAMES.get(table)
    if name is None:
        raise InvalidNamespace(f"Unknown durable table {table!r}; expected one of {sorted(TABLE_NAMES)}.")
    return sql.Identifier(name)


def _fragment(name: str) -> str:
    # Description comments are dropped so a fragment can sit mid-line when composed.
    return "\n".join(line for line in QUERIES[name].splitlines() if not line.lstrip().startswith("--"))


# Both return the statement rendered to bytes once: psycopg caches its conversion of a
# bytes query, while a Composed one is rendered again on every execution.


@cache
def statement(name: str, table: str) -> bytes:
    """The named query ``name`` against ``table`` (a table key such as ``"runs"``)."""
    return sql.SQL(QUERIES[name]).format(table=table_identifier(table)).as_bytes(None)


#: Parameters every part of a joined statement shares (the scope); the others get the
#: part's number appended.
_SHARED_PARAMS = frozenset({"project", "environment"})
_PLACEHOLDER = re.compile(rb"%\((\w+)\)([sb])")


@lru_cache(maxsize=256)
def joined_statement(parts: tuple[bytes, ...]) -> bytes:
    """Several write statements as one: every part but the last in a data-modifying
    WITH (PostgreSQL runs each exactly once, whether or not it is read), the last as
    the main statement. One statement is one message and one round trip, atomic
    without BEGIN and COMMIT: in a busy worker that was 2 us of CPU per job less
    than a pipeline of the same statements in a transaction. All parts see one
    snapshot, so they must not touch the same key (the caller checks).
    Each part's parameters are renamed ``<name>_<part>`` (see :func:`joined_params`)."""
    texts = [_renamed(text, number) for number, text in enumerate(parts)]
    ctes = b",\n".join(b"part_%d AS (\n%s\n)" % (number, text) for number, text in enumerate(texts[:-1]))
    return b"WITH " + ctes + b"\n" + texts[-1]


@lru_cache(maxsize=64)
def release_statement(parts: tuple[bytes, ...]) -> bytes:
    """The hot plane's ``ack`` (leases released only under their token, rows locked in
    its order) as ``released``, then ``release_and_delete`` (the released jobs deleted)
    and the write statements ``parts`` joined as further data-modifying WITH parts, as
    :func:`joined_statement` joins them; it returns the ids released. Parameters as
    :func:`joined_params` names them; ack's are prefixed ``release_``."""
    from .hot import QUERIES as HOT_QUERIES  # the one statement that spans both planes

    ack = _PLACEHOLDER.sub(lambda m: m.group(0) if m.group(1).decode() in _SHARED_PARAMS
                           else b"%(release_" + m.group(1) + b")" + m.group(2), _bare(HOT_QUERIES["ack"].encode()))
    head = b"WITH released AS (\n" + ack + b"\n),\n" + _bare(statement("release_and_delete", "jobs"))
    ctes = b"".join(b",\npart_%d AS (\n%s\n)" % (number, _renamed(text, number)) for number, text in enumerate(parts))
    return head + ctes + b"\nSELECT job_id FROM released"


@lru_cache(maxsize=8)
def claim_read_statement(table: str) -> bytes:
    """The hot plane's ``claim`` (floor, SKIP LOCKED, tokens in claim order) as
    ``claimed``, then ``claim_and_read_rows``: each claimed job with its row of ``table``
    (NULLs where the row is gone). Parameters: the claim's and ``namespace``."""
    from .hot import QUERIES as HOT_QUERIES  # the claim is the hot plane's own statement

    columns = b"claimed (job_id, token, expires_at, rank, ord, floor_rank, floor_ord)"
    return (b"WITH " + columns + b" AS (\n" + _bare(HOT_QUERIES["claim"].encode()) + b"\n)\n"
            + _bare(statement("claim_and_read_rows", table)))


def _bare(text: bytes) -> bytes:
    """A statement without its leading comments and trailing ";"."""
    return re.sub(rb"^\s*(--[^\n]*\n\s*)*", b"", text).rstrip().rstrip(b";")


def _renamed(text: bytes, number: int) -> bytes:
    """A part of a joined statement: without its comments and ";", each parameter but
    the shared ones renamed ``<name>_<number>``."""
    return _PLACEHOLDER.sub(lambda m: m.group(0) if m.group(1).decode() in _SHARED_PARAMS
                            else b"%(" + m.group(1) + b"_%d)" % number + m.group(2), _bare(text))


def joined_params(params: list[dict[str, Any]]) -> dict[str, Any]:
    """The parameters of :func:`joined_statement`'s parts, renamed to match."""
    out: dict[str, Any] = {}
    for number, part in enumerate(params):
        for name, value in part.items():
            out[name if name in _SHARED_PARAMS else f"{name}_{number}"] = value
    return out


@lru_cache(maxsize=64)
def kind_statement(name: str, table: str, kind: str) -> bytes:
    """The named query with ``{kind}`` rendered as a literal (kinds are a small set)."""
    return sql.SQL(QUERIES[name]).format(table=table_identifier(table), kind=sql.Literal(kind)).as_bytes(None)


@cache
def composed(table: str, parts: tuple[str, ...]) -> bytes:
    """Fixed fragments joined into one statement. On ``oqron_runs`` the startedAt key is
    the indexed expression itself, so the run indexes serve both filter and sort."""
    started = "started_key_indexed" if table == "runs" else "started_key_guarded"
    text = "\n".join(_fragment(part) for part in parts)
    return sql.SQL(text).format(table=table_identifier(table), started=sql.SQL(_fragment(started))).as_bytes(None)


def row_columns(scope: Scope, rows: list[EncodedRow]) -> dict[str, Any]:
    """Parameters of ``upsert_rows`` / ``insert_rows``: one array per column, so a batch
    is one statement whatever its size."""
    return {
        "project": scope.project,
        "environment": scope.environment,
        "namespaces": TextArray([r.namespace for r in rows]),
        "kinds": TextArray([r.kind for r in rows]),
        "ids": TextArray([r.id for r in rows]),
        "values": TextArray([r.value_json for r in rows]),
        "inserted": BigintArray([r.inserted_at for r in rows]),
        "expires": BigintArray([r.expires_at for r in rows]),
    }


def list_plan(scope: Scope, query: ListQuery) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The fragments and parameters of ``query``, mirroring ``matching.matches_query``:
    equality filters, started window [from, to), keyset after (key, id), order, limit."""
    parts = ["list_rows"]
    params: dict[str, Any] = {
        "project": scope.project, "environment": scope.environment, "limit": query.limit,
    }
    namespace = _namespace_for(query.namespace, query.kind)
    for field in ("namespace", "kind", "status", "name", "module", "correlation"):
        value = namespace if field == "namespace" else getattr(query, field)
        if value is not None:
            parts.append(f"where_{field}")
            params[field] = value
    if query.order == "started" or query.started_from is not None or query.started_to is not None:
        parts.append("where_started_number")
    if query.started_from is not None:
        parts.append("where_started_from")
        params["started_from"] = _started_bound(query.started_from)
    if query.started_to is not None:
        parts.append("where_started_to")
        params["started_to"] = _started_bound(query.started_to)
    if namespace is not None:
        parts += [f"where_namespace_{bound}" for bound in ("started_from", "started_to") if bound in params]
    direction = "desc" if query.descending else "asc"
    if query.after is not None:
        key, params["after_id"] = query.after
        parts.append(f"after_{query.order}_{direction}")
        params["after_key"] = _started_bound(key) if query.order == "started" else key
    parts += [f"order_{query.order}_{direction}", "limit_rows"]
    return tuple(parts), params


def _namespace_for(namespace: str | None, kind: str | None) -> str | None:
    """The namespace to filter on: a kind held by one namespace names it (runs are left
    out of oqron_runs' kind index, and their namespace is indexed)."""
    return namespace if namespace is not None or kind is None else sole_namespace_of_kind(kind)


def _started_bound(value: int | float) -> float:
    """A startedAt bound as the float8 the key is (bound as numeric or bigint, the
    comparison would be cast and miss the index). An int past float8's range bounds as
    an infinity: no stored key lies beyond it, since the runs table refuses such rows."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def count_plan(scope: Scope, namespace: str | None, kind: str | None) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The fragments and parameters of a count over one namespace and/or kind."""
    parts = ["count_rows"]
    params: dict[str, Any] = {"project": scope.project, "environment": scope.environment}
    namespace = _namespace_for(namespace, kind)
    if namespace is not None:
        parts.append("where_namespace")
        params["namespace"] = namespace
    if kind is not None:
        parts.append("where_kind")
        params["kind"] = kind
    return tuple(parts), params

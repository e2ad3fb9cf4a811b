"""The optional trigram index of the dead letters' text search (sql/search_schema.sql),
created by :meth:`PostgresDurableStore.ensure_schema` when the server allows pg_trgm."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from .statements import QUERIES, SEARCH_INDEX, SEARCH_SCHEMA

#: What a server that cannot create pg_trgm answers: no contrib package (the control
#: file is missing), no right to create it, or an opclass it does not have.
CANNOT_CREATE = (psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedFile,
                 psycopg.errors.FeatureNotSupported, psycopg.errors.UndefinedObject)


def ensure_search_index(conn: Any) -> bool:
    """Create the index while it is missing; whether it exists. A server that cannot
    create pg_trgm keeps searching dead letters by a scan (nothing else changes)."""
    if conn.execute(QUERIES["has_table"], {"name": SEARCH_INDEX}).fetchone()[0]:
        return True
    try:
        with conn.transaction():
            conn.execute(SEARCH_SCHEMA["search_lock"])
            conn.execute(SEARCH_SCHEMA["search_extension"])
            [(schema,)] = conn.execute(SEARCH_SCHEMA["search_extension_schema"]).fetchall()
            conn.execute(sql.SQL(SEARCH_SCHEMA["search_index"]).format(trgm=sql.Identifier(schema)))
    except CANNOT_CREATE:
        return False
    return True

"""Hostile values and raw rows for the hardening tests: rows an older engine wrote (ids
with a newline, values nested thousands deep) that today's engine refuses, so they are
inserted with SQL, as they would sit in the tables."""

from __future__ import annotations

import base64
import json

from django.db import connections

from oqronkit import classify_namespace, table_name_for_namespace
from oqronkit.clock import now_ms
from tests.board.conftest import SharedDatabase

# Sort keys and ids a crafted cursor may carry (json text, so NaN and 1e400 survive).
CURSOR_KEYS = ["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 30, "true", '"x"', "null"]
CURSOR_IDS = ['"a\\u0000b"', '"\\ud800"', "1", "null", '["x"]']


def crafted_cursor(key_text: str, id_text: str = '"x"') -> str:
    raw = f"[{key_text},{id_text}]".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def hostile_cursors() -> list[str]:
    cursors = [crafted_cursor(k) for k in CURSOR_KEYS] + [crafted_cursor("1", i) for i in CURSOR_IDS]
    return [*cursors, "!!", "~", "x" * 10_000, crafted_cursor("1")[:-2], base64.urlsafe_b64encode(b"[1]").decode()]


def raw_put(db: SharedDatabase, namespace: str, id: str, value: object | str) -> None:
    """Insert one row as an older engine could have (no facade checks)."""
    text = value if isinstance(value, str) else json.dumps(value)
    table = table_name_for_namespace(namespace)  # one of three fixed names, never input
    with connections[db.alias].cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (project, environment, namespace, record_kind, id, value, inserted_at, expires_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, NULL)",
            [db.project, db.environment, namespace, classify_namespace(namespace), id, text, now_ms()],
        )


def nested(depth: int) -> str:
    """JSON text nested ``depth`` levels deep (about 2 bytes a level)."""
    return '{"deep":' + "[" * depth + "1" + "]" * depth + "}"

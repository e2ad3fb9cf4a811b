"""The SQLite hot plane's rate limits: the algorithms of rate_step.py run inside the one
upsert statement as the SQL function ``oqron_rate_step``, so a check is one statement
under the database's write lock. A row's state is JSON ``{"s": state, "a": answer}``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from .rate_step import State, step, ttl_ms
from .rate_types import Ban, RateAnswer, RateRequest, Tier
from .sqlfiles import load_queries
from .types import Scope

_Q = load_queries("oqronkit.backends", "sql/sqlite/hot_queries.sql")


def _decode_request(text: str) -> RateRequest:
    raw = json.loads(text)
    ban = Ban(*raw["b"]) if raw["b"] else None
    return RateRequest("", "", raw["c"], tuple(Tier(*tier) for tier in raw["t"]), ban)


def _sql_step(stored: str | None, request: str, now: int) -> str:
    state: State = json.loads(stored)["s"] if stored else {}
    answer, new = step(state, _decode_request(request), now)
    return json.dumps({"s": state if new is None else new, "a": list(_answer_fields(answer))},
                      separators=(",", ":"))


def _answer_fields(answer: RateAnswer) -> tuple[Any, ...]:
    return (answer.allowed, answer.limit, answer.remaining, answer.reset, answer.retry_after, answer.banned,
            answer.tier)


def hit(conn: sqlite3.Connection, scope: Scope, request: RateRequest, now: int) -> RateAnswer:
    """Run one check on ``conn`` (inside the caller's write transaction)."""
    # deterministic=False: the function is never used where SQLite may cache its result.
    conn.create_function("oqron_rate_step", 3, _sql_step)
    ban = request.ban
    encoded = json.dumps({"c": request.cost, "t": [[t.algorithm, t.limit, t.period_ms] for t in request.tiers],
                          "b": [ban.strikes, ban.window_ms, ban.duration_ms] if ban else None})
    row = conn.execute(_Q["rate_hit"], (scope.project, scope.environment, request.name, request.key, encoded, now,
                                        ttl_ms(request))).fetchone()
    allowed, limit, remaining, reset, retry, banned, tier = json.loads(row[0])["a"]
    return RateAnswer(bool(allowed), limit, remaining, reset, retry, banned=bool(banned), tier=tier)


def edit(conn: sqlite3.Connection, scope: Scope, name: str, key: str, *, drop: Sequence[str] = (),
         override: Sequence[int] | None = None, ttl: int = 0, now: int = 0) -> None:
    """Drop parts of a key's state or set its override (inside the caller's write transaction)."""
    where = (scope.project, scope.environment, name, key)
    row = conn.execute(_Q["rate_read"], where).fetchone()
    if row is None and override is None:
        return
    state: State = json.loads(row[0])["s"] if row is not None and (override is None or row[1] > now) else {}
    state = {field: value for field, value in state.items() if field not in drop}
    expires_at = row[1] if row is not None else 0
    if override is not None:
        state["ov"] = list(override)
        expires_at = max(expires_at, now + ttl)
    conn.execute(_Q["rate_write"], (*where, json.dumps({"s": state, "a": None}), expires_at))


def prune(conn: sqlite3.Connection, now: int) -> int:
    return conn.execute(_Q["rate_prune"], (now,)).rowcount

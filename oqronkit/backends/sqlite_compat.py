"""Python 3.12.0 and 3.12.1 warn on every numbered placeholder (``?1``) bound from a
sequence ("a named parameter, but you supplied a sequence"; CPython fixed it in 3.12.2).
Our statements use numbered placeholders to repeat a value, so on those two versions
connections bind such statements' parameters as the mapping ``{"1": ..., "2": ...}``,
which every version reads the same way. Elsewhere :func:`connection_factory` is the
plain ``sqlite3.Connection``: no cost where the bug is absent."""

from __future__ import annotations

import re
import sqlite3
import sys
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

AFFECTED = ((3, 12, 0), (3, 12, 1))
_NUMBERED = re.compile(r"\?[0-9]")


@lru_cache(maxsize=512)
def _is_numbered(sql: str) -> bool:
    return _NUMBERED.search(sql) is not None


def as_mapping(params: Any) -> Any:
    """A sequence of parameters as the mapping numbered placeholders read."""
    if isinstance(params, Mapping) or not isinstance(params, Sequence):
        return params
    return {str(i): value for i, value in enumerate(params, 1)}


class NumberedParamsConnection(sqlite3.Connection):
    """Binds a statement with numbered placeholders from a mapping (see the module)."""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        return super().execute(sql, as_mapping(parameters) if _is_numbered(sql) else parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        if _is_numbered(sql):
            parameters = (as_mapping(p) for p in parameters)
        return super().executemany(sql, parameters)


def connection_factory(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> type[sqlite3.Connection]:
    """The connection class for this interpreter."""
    return NumberedParamsConnection if version in AFFECTED else sqlite3.Connection

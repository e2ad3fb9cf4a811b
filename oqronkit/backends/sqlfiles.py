"""Named SQL queries loaded from packaged ``.sql`` files (shared by the SQL backends).

A query file holds any number of queries, each introduced by a marker line and,
by convention, a one-line description comment::

    -- name: get_many
    -- The rows among a JSON array of ids.
    SELECT ...

Text before the first marker (a file header) is ignored. Files are read with
:mod:`importlib.resources`, so they load from an installed wheel or zip as well as
from a source checkout; SQL never lives in Python strings.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_MARKER = re.compile(r"^--\s*name:\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*$", re.MULTILINE)


def load_sql(package: str, filename: str) -> str:
    """The whole text of ``filename`` inside ``package`` (e.g. a ``schema.sql`` script).

    ``filename`` may name a sub-folder with ``/`` (``"sql/sqlite/schema.sql"``), so the
    folder holding the files does not itself need to be a package.
    """
    return _read(package, filename)


def load_queries(package: str, filename: str) -> dict[str, str]:
    """The queries of ``filename`` inside ``package``, by the name on their
    ``-- name: query_name`` marker. A trailing ``;`` is dropped so a query can also
    be used as a fragment of a larger statement. Duplicate or empty queries are a
    ``ValueError`` (a packaging mistake we want to see at import, not at run time)."""
    return dict(_parse(package, filename))


@cache
def _parse(package: str, filename: str) -> tuple[tuple[str, str], ...]:
    text = _read(package, filename)
    markers = list(_MARKER.finditer(text))
    queries: dict[str, str] = {}
    for index, marker in enumerate(markers):
        end = markers[index + 1].start() if index + 1 < len(markers) else len(text)
        body = text[marker.end():end].strip().rstrip(";").rstrip()
        name = marker.group("name")
        if name in queries:
            raise ValueError(f"{package}/{filename}: the query {name!r} is defined twice.")
        if not _has_statement(body):
            raise ValueError(f"{package}/{filename}: the query {name!r} is empty.")
        queries[name] = body
    return tuple(queries.items())


def _has_statement(body: str) -> bool:
    """Whether ``body`` holds anything besides ``--`` comment lines."""
    return any(line.strip() and not line.strip().startswith("--") for line in body.splitlines())


def _read(package: str, filename: str) -> str:
    resource = resources.files(package).joinpath(*filename.split("/"))
    return resource.read_text(encoding="utf-8")

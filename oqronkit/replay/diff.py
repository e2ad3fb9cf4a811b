"""A structural diff of two JSON values: the paths added, removed and changed.

A pure function with no engine in sight, so its laws are property-tested
(tests/engine/replay/test_diff.py): a value equals itself, and applying the changes to
the first value rebuilds the second.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

ChangeKind = Literal["added", "removed", "changed"]
PathPart = str | int
#: A diff longer than this stops there (the replay page shows the first ones).
MAX_CHANGES = 200


class Change(NamedTuple):
    """One difference: ``path`` from the root (object keys and list indexes)."""

    kind: ChangeKind
    path: tuple[PathPart, ...]
    before: Any
    after: Any

    def describe(self) -> dict[str, Any]:
        """The change as JSON (the API's and the CLI's shape)."""
        out: dict[str, Any] = {"kind": self.kind, "path": format_path(self.path)}
        if self.kind != "added":
            out["before"] = self.before
        if self.kind != "removed":
            out["after"] = self.after
        return out


def _kind_of(value: Any) -> str:
    # JSON has no bool/number equality: True and 1 differ, 1 and 1.0 do not.
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def json_diff(before: Any, after: Any, *, limit: int = MAX_CHANGES) -> list[Change]:
    """Every path where ``after`` differs from ``before``, in document order: keys
    only in ``after`` are added, keys only in ``before`` removed, and leaves (or values
    of another JSON type) that differ changed. Lists compare index by index."""
    changes: list[Change] = []
    _walk(before, after, (), changes, limit)
    return changes


def _walk(before: Any, after: Any, path: tuple[PathPart, ...], out: list[Change], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in before:
            if key not in after:
                out.append(Change("removed", (*path, key), before[key], None))
            else:
                _walk(before[key], after[key], (*path, key), out, limit)
        out.extend(Change("added", (*path, key), None, after[key]) for key in after if key not in before)
    elif isinstance(before, list) and isinstance(after, list):
        for index, (old, new) in enumerate(zip(before, after, strict=False)):
            _walk(old, new, (*path, index), out, limit)
        out.extend(Change("removed", (*path, i), before[i], None) for i in range(len(after), len(before)))
        out.extend(Change("added", (*path, i), None, after[i]) for i in range(len(before), len(after)))
    elif _kind_of(before) != _kind_of(after) or before != after:
        out.append(Change("changed", path, before, after))
    del out[limit:]


def format_path(path: Sequence[PathPart]) -> str:
    """``$.order.lines[2].price``; a key that is not a plain name is quoted: ``$["a b"]``."""
    text = "$"
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part.isidentifier():
            text += f".{part}"
        else:
            text += "[" + json.dumps(part, ensure_ascii=False) + "]"
    return text

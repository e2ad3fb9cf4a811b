"""What the operator CLI prints: aligned tables for people, one JSON document for scripts.

Every command builds a :class:`Result` (rows with stable field names, or an action's
outcome); :func:`render_human` and :func:`render_json` are the only two ways it leaves.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

#: Widest a table cell gets; longer values end in an ellipsis (JSON keeps them whole).
MAX_CELL = 48
#: Fields holding epoch milliseconds: a table shows them relative and as ISO 8601.
TIME_FIELDS = frozenset({"at", "created_at", "died_at", "last_died_at", "first_died_at", "started_at", "ended_at",
                         "next_run_at", "last_fired_at", "run_at", "updated_at"})


@dataclass
class Result:
    """One command's answer. ``columns`` name the row fields a table shows, in order."""

    command: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    columns: Sequence[str] = ()
    message: str | None = None
    ok: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: A table shows at most this many rows (an action's per-job outcomes); --json has them all.
    shown: int | None = None

    def document(self) -> dict[str, Any]:
        """The ``--json`` document: ``command``, ``ok``, then ``items``/``count`` for a
        listing or ``message`` and the action's counts for an action."""
        doc: dict[str, Any] = {"command": self.command, "ok": self.ok}
        if self.columns:
            doc.update(items=self.rows, count=len(self.rows))
        if self.message is not None:
            doc["message"] = self.message
        doc.update(self.extra)
        if self.notes:
            doc["notes"] = self.notes
        return doc


def render_json(result: Result, out: TextIO) -> None:
    json.dump(result.document(), out, ensure_ascii=False, sort_keys=False, default=str)
    out.write("\n")


def render_human(result: Result, out: TextIO, *, now: int) -> None:
    if result.columns:
        rows = result.rows if result.shown is None else result.rows[: result.shown]
        out.write(table(rows, result.columns, now=now))
        if len(rows) < len(result.rows):
            out.write(f"... and {len(result.rows) - len(rows):,} more (--json lists every one)\n")
    if result.message is not None:
        out.write(result.message + "\n")
    for note in result.notes:
        out.write(f"note: {note}\n")


def table(rows: list[dict[str, Any]], columns: Sequence[str], *, now: int) -> str:
    """An aligned table with a header; ``(none)`` when there are no rows."""
    if not rows:
        return "(none)\n"
    cells = [[cell(row.get(c), c, now=now) for c in columns] for row in rows]
    header = [c.upper().replace("_", " ") for c in columns]
    widths = [max(width(v) for v in [h, *(r[i] for r in cells)]) for i, h in enumerate(header)]
    lines = [_line(header, widths)] + [_line(r, widths) for r in cells]
    return "".join(line.rstrip() + "\n" for line in lines)


def _line(values: list[str], widths: list[int]) -> str:
    return "  ".join(v + " " * (w - width(v)) for v, w in zip(values, widths, strict=True))


def width(text: str) -> int:
    """Terminal columns of ``text``: wide East Asian characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def cell(value: Any, column: str, *, now: int) -> str:
    if value is None or value == "":
        return "-"
    if column in TIME_FIELDS and isinstance(value, int | float) and not isinstance(value, bool):
        return f"{relative(int(value), now)} ({iso(int(value))})"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = ", ".join(value)
    elif isinstance(value, dict | list):
        value = json.dumps(value, ensure_ascii=False, default=str)
    return truncate(" ".join(str(value).split()))  # newlines and tabs would break the columns


def truncate(text: str, limit: int = MAX_CELL) -> str:
    # Control characters (an escape sequence in an error message) never reach the terminal.
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def iso(ms: int) -> str:
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def relative(ms: int, now: int) -> str:
    """``"3m ago"`` or ``"in 2h"``: the largest whole unit."""
    delta = (now - ms) / 1000
    ahead = delta < 0
    seconds = abs(delta)
    for size, unit in ((86_400, "d"), (3_600, "h"), (60, "m")):
        if seconds >= size:
            amount = f"{int(seconds // size)}{unit}"
            break
    else:
        if seconds < 1:
            return "now"
        amount = f"{int(seconds)}s"
    return f"in {amount}" if ahead else f"{amount} ago"

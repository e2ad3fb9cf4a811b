"""Reading numbers out of record values the board did not write (untrusted JSON): the
engine's reader, so the board and the engine agree on what a number is."""

from __future__ import annotations

from oqronkit.codec import json_int

__all__ = ["json_int"]

"""The read-only admin list of ``Record``; issue #4 extends it."""

from __future__ import annotations

from oqronboard.admin import register_read_only

from .models import Record

register_read_only(Record)

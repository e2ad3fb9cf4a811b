"""The read-only admin list of ``Record``, with pause and resume actions for queue
control records (operators only; through the engine)."""

from __future__ import annotations

from oqronboard.admin import RecordAdmin, register_read_only

from .models import Record

register_read_only(Record, RecordAdmin)

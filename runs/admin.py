"""The read-only admin list of ``RunRecord`` (oqronboard.admin explains the limits)."""

from __future__ import annotations

from oqronboard.admin import RunRecordAdmin, register_read_only

from .models import RunRecord

register_read_only(RunRecord, RunRecordAdmin)

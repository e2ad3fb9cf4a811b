"""The read-only admin list of ``JobRecord``, with retry and delete actions for dead
letters (operators only; through the engine)."""

from __future__ import annotations

from oqronboard.admin import JobRecordAdmin, register_read_only

from .models import JobRecord

register_read_only(JobRecord, JobRecordAdmin)

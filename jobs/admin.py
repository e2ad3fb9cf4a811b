"""The read-only admin list of ``JobRecord``; issue #4 extends it."""

from __future__ import annotations

from oqronboard.admin import register_read_only

from .models import JobRecord

register_read_only(JobRecord)

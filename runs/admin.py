"""The read-only admin list of ``RunRecord``; issue #4 extends it."""

from __future__ import annotations

from oqronboard.admin import register_read_only

from .models import RunRecord

register_read_only(RunRecord)

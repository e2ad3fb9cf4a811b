"""What each HTTP answer calls for, and Retry-After's two forms."""

from __future__ import annotations

import email.utils

import pytest

from oqronkit.webhooks.policy import MAX_RETRY_AFTER_MS, next_delay_ms, retry_after_ms, verdict


@pytest.mark.parametrize(("status", "expected"), [
    (200, "delivered"), (204, "delivered"), (299, "delivered"), (301, "retry"), (302, "retry"), (308, "retry"),
    (400, "dead"), (401, "dead"), (403, "dead"), (404, "dead"), (410, "dead"), (422, "dead"),
    (408, "retry"), (409, "retry"), (425, "retry"), (429, "retry"), (500, "retry"), (503, "retry"), (599, "retry"),
    (100, "retry"),
])
def test_verdicts(status, expected):
    assert verdict(status) == expected


def test_retry_after_in_seconds_and_as_an_http_date():
    now = 1_800_000_000_000
    assert retry_after_ms("120", now) == 120_000
    assert retry_after_ms(" 0 ", now) == 0
    assert retry_after_ms(email.utils.formatdate((now + 90_000) / 1000, usegmt=True), now) == 90_000
    assert retry_after_ms(email.utils.formatdate((now - 5_000) / 1000, usegmt=True), now) == 0
    assert retry_after_ms("99999999", now) == MAX_RETRY_AFTER_MS
    for unreadable in (None, "", "soon", "-5", "1.5"):
        assert retry_after_ms(unreadable, now) is None


def test_the_next_delay_follows_the_schedule_and_then_repeats_its_last():
    schedule = (0, 5_000, 300_000)
    assert [next_delay_ms(schedule, attempt) for attempt in (1, 2, 3, 4)] == [5_000, 300_000, 300_000, 300_000]

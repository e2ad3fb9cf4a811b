"""Event names and patterns: '*' one segment, '**' any number (none included)."""

from __future__ import annotations

import pytest

from oqronkit.errors import ConfigurationError, InvalidJob
from oqronkit.webhooks.patterns import check_event, check_patterns, matches

CASES = [
    ("order.paid", "order.paid", True), ("order.paid", "order.paidx", False), ("order.paid", "order", False),
    ("order.*", "order.paid", True), ("order.*", "order.paid.late", False), ("order.*", "order", False),
    ("*.paid", "order.paid", True), ("*.paid", "paid", False), ("*", "order", True), ("*", "order.paid", False),
    ("order.**", "order", True), ("order.**", "order.paid", True), ("order.**", "order.paid.late", True),
    ("order.**", "orders.paid", False), ("**", "a", True), ("**", "a.b.c", True),
    ("**.paid", "paid", True), ("**.paid", "x.y.paid", True), ("**.paid", "x.paidx", False),
    ("a.**.z", "a.z", True), ("a.**.z", "a.b.c.z", True), ("a.**.z", "a.b.c", False),
    ("a.*.**", "a", False), ("a.*.**", "a.b", True), ("a.*.**", "a.b.c.d", True),
    ("a.**.**", "a", True), ("Order.Paid", "order.paid", False),
]


@pytest.mark.parametrize(("pattern", "event", "expected"), CASES)
def test_pattern_matching(pattern, event, expected):
    assert matches(pattern, event) is expected


@pytest.mark.parametrize("event", ["", "order..paid", ".order", "order.", "order paid", "order.*", "é", None, 7,
                                   "x" * 201, "a." + "b" * 65])
def test_bad_event_names_are_refused(event):
    with pytest.raises(InvalidJob, match="Event name"):
        check_event(event)


@pytest.mark.parametrize("patterns", [[], "order.*", ["order..*"], ["order.***"], ["ord*er"], [None], ["a"] * 101,
                                      None])
def test_bad_patterns_are_refused(patterns):
    with pytest.raises(ConfigurationError):
        check_patterns(patterns, what="test")


def test_duplicate_patterns_are_kept_once():
    assert check_patterns(["a.*", "b", "a.*"], what="test") == ["a.*", "b"]

"""The structural JSON diff: its laws over generated JSON values, and its paths."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oqronkit.replay.diff import Change, format_path, json_diff

# A loaded machine (the suite runs beside others) must not fail a law for slowness alone.
PROPERTY = settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=20,
)


def apply(before: Any, changes: list[Change]) -> Any:
    """``before`` with ``changes`` applied: removals from the highest list index down."""
    value = copy.deepcopy(before)
    if any(not c.path for c in changes):
        [root] = changes
        return root.after
    def order(c: Change) -> tuple[bool, list[int]]:
        sign = -1 if c.kind == "removed" else 1
        return c.kind != "removed", [sign * p if isinstance(p, int) else 0 for p in c.path]

    for change in sorted(changes, key=order):
        *parent_path, last = change.path
        parent = value
        for part in parent_path:
            parent = parent[part]
        if change.kind == "removed":
            del parent[last]
        elif change.kind == "added" and isinstance(parent, list):
            parent.append(change.after)
        else:
            parent[last] = change.after
    return value


def same_json(a: Any, b: Any) -> bool:
    return not json_diff(a, b)


@PROPERTY
@given(json_values)
def test_a_value_has_no_difference_with_itself(value):
    assert json_diff(value, copy.deepcopy(value)) == []


@PROPERTY
@given(json_values, json_values)
def test_applying_the_changes_rebuilds_the_second_value(before, after):
    changes = json_diff(before, after, limit=10_000)
    assert same_json(apply(before, changes), after)
    assert (changes == []) == same_json(before, after)


@PROPERTY
@given(json_values, json_values)
def test_the_reverse_diff_swaps_added_and_removed(before, after):
    swap = {"added": "removed", "removed": "added", "changed": "changed"}
    forward = {(c.kind, c.path) for c in json_diff(before, after, limit=10_000)}
    backward = {(swap[c.kind], c.path) for c in json_diff(after, before, limit=10_000)}
    assert forward == backward


def test_paths_name_the_added_removed_and_changed_leaves():
    before = {"total": 10, "lines": [{"sku": "a"}, {"sku": "b"}], "note": "x", "odd key": 1}
    after = {"total": 12, "lines": [{"sku": "a", "qty": 2}], "odd key": 1, "paid": True}
    got = [(c.kind, format_path(c.path)) for c in json_diff(before, after)]
    assert got == [("changed", "$.total"), ("added", "$.lines[0].qty"), ("removed", "$.lines[1]"),
                   ("removed", "$.note"), ("added", "$.paid")]


def test_json_types_differ_where_python_equality_does_not():
    assert [c.kind for c in json_diff(True, 1)] == ["changed"]
    assert json_diff(1, 1.0) == []
    assert json_diff(None, {}) == [Change("changed", (), None, {})]


def test_a_long_diff_stops_at_its_limit():
    assert len(json_diff(list(range(50)), list(range(1, 51)), limit=7)) == 7


def test_a_change_describes_itself_as_json():
    [change] = json_diff({"a": [1]}, {"a": [2]})
    assert change.describe() == {"kind": "changed", "path": "$.a[0]", "before": 1, "after": 2}

"""The mergeable sketch: quantiles within its relative error, merge = the sketch of the union."""

from __future__ import annotations

import json
import random

from oqronkit.history.sketch import RELATIVE_ERROR, Sketch


def exact(values, q):
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))]


def test_quantiles_hold_the_relative_error():
    rng = random.Random(7)
    values = [rng.lognormvariate(4, 1.2) for _ in range(20_000)]
    sketch = Sketch()
    for v in values:
        sketch.add(v)
    for q in (0.5, 0.95, 0.99):
        assert abs(sketch.quantile(q) - exact(values, q)) <= RELATIVE_ERROR * exact(values, q) * 1.01


def test_merge_equals_the_sketch_of_all_values_and_survives_json():
    rng = random.Random(3)
    parts = [[rng.uniform(0, 500) for _ in range(300)] + [0, 0] for _ in range(5)]
    merged, whole = Sketch(), Sketch()
    for part in parts:
        sketch = Sketch()
        for v in part:
            sketch.add(v)
            whole.add(v)
        merged.merge(Sketch.from_json(json.loads(json.dumps(sketch.to_json()))))
    assert merged.buckets == whole.buckets and merged.count == whole.count == 1510 and merged.zeros == 10
    assert merged.quantile(0.99) == whole.quantile(0.99)


def test_empty_and_malformed():
    assert Sketch().quantile(0.5) is None and Sketch().mean is None
    assert Sketch.from_json({"b": {"x": 1}}).count == 0
    assert Sketch.from_json("nope").count == 0
    only_zeros = Sketch()
    only_zeros.add(0)
    assert only_zeros.quantile(0.99) == 0.0



def test_several_quantiles_in_one_walk_equal_one_at_a_time():
    rng = random.Random(11)
    sketch = Sketch()
    for _ in range(5_000):
        sketch.add(rng.choice([0, rng.expovariate(0.01)]))
    qs = [0.1, 0.5, 0.9, 0.95, 0.99, 1.0]
    assert sketch.quantiles(qs) == [sketch.quantile(q) for q in qs]
    assert Sketch().quantiles([0.5]) == [None]

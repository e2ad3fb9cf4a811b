"""Issue 18: ``add`` refuses what no plane can store or run (numbers out of range, NaN,
text with control characters or lone surrogates, over-deep payloads) with InvalidJob,
writing nothing, with the same message in every mode. Queue declarations refuse the
same with ConfigurationError."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from oqronkit import ConfigurationError, Engine, InvalidJob
from oqronkit.bounds import MAX_EPOCH_MS
from oqronkit.clock import now_ms

NAN, INF = float("nan"), float("inf")


def nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


BAD_OPTIONS = {
    "delay-1e300": ({"delay": 1e300}, "delay must be at most 3,153,600,000 seconds"),
    "delay-nan": ({"delay": NAN}, "delay must be a finite number of seconds, got nan"),
    "delay-inf": ({"delay": INF}, "delay must be at most"),
    "delay-huge-int": ({"delay": 10**400}, "delay must be at most"),
    "delay-negative": ({"delay": -1}, "delay must not be negative"),
    "delay-timedelta-max": ({"delay": timedelta.max}, "delay must be at most"),
    "run_at-1e20": ({"run_at": 10**20}, "run_at must be from 1970 to the year 9999"),
    "run_at-limit": ({"run_at": MAX_EPOCH_MS}, "run_at must be from 1970"),
    "run_at-negative": ({"run_at": -1}, "run_at must be from 1970"),
    "run_at-year-1": ({"run_at": datetime(1, 1, 2, tzinfo=UTC)}, "run_at must be from 1970"),
    "run_at-float": ({"run_at": 1e12}, "run_at must be an aware datetime or epoch milliseconds"),
    "timeout-nan": ({"timeout": NAN}, "timeout must be a finite number of seconds"),
    "timeout-inf": ({"timeout": INF}, "timeout must be at most"),
    "timeout-zero": ({"timeout": 0}, "timeout must be positive"),
    "attempts-1e30": ({"attempts": 10**30}, "attempts must be an integer from 1 to 1000"),
    "attempts-zero": ({"attempts": 0}, "attempts must be an integer from 1 to 1000"),
    "attempts-float": ({"attempts": 2.0}, "attempts must be an integer"),
    "backoff-nan": ({"backoff": NAN}, "backoff must be a finite number of seconds"),
    "backoff-delay-inf": ({"backoff": {"delay": INF}}, "backoff delay must be at most"),
    "backoff-max-nan": ({"backoff": {"max": NAN}}, "backoff max must be a finite number"),
    "backoff-jitter-nan": ({"backoff": {"jitter": NAN}}, "backoff jitter must be a number between 0 and 1"),
    "backoff-jitter-text": ({"backoff": {"jitter": "x"}}, "backoff jitter must be a number"),
    "backoff-unknown-key": ({"backoff": {"delai": 1}}, "Unknown backoff key"),
    "job_id-newline": ({"job_id": "a\nb"}, r"job_id 'a\\nb' cannot be used: it holds the control character"),
    "job_id-nul": ({"job_id": "a\x00"}, "job_id .* cannot be used: it holds the control character"),
    "job_id-surrogate": ({"job_id": "a\ud800"}, "job_id .* cannot be used: it holds a lone surrogate"),
    "job_id-long": ({"job_id": "x" * 201}, "job_id must be a non-empty string of at most 200"),
    "correlation_id-nul": ({"correlation_id": "c\x00"}, "correlation_id .* cannot be used"),
    "correlation_id-surrogate": ({"correlation_id": "\udfff"}, "correlation_id .* lone surrogate"),
    "correlation_id-int": ({"correlation_id": 7}, "correlation_id must be a non-empty string"),
    "tag-control": ({"tags": ["ok", "b\x07"]}, "a tag .* cannot be used: it holds the control character"),
    "tag-surrogate": ({"tags": ["\ud83d"]}, "a tag .* lone surrogate"),
    "tag-not-text": ({"tags": [1]}, "a tag must be a non-empty string"),
    "depends_on-id-control": ({"depends_on": ["p\n"]}, "depends_on job id .* cannot be used"),
    "depends_on-queue-surrogate": ({"depends_on": [("q\udc00", "p")]}, "depends_on queue .* lone surrogate"),
}


def assert_nothing_written(engine: Engine, queue: str = "bounds") -> None:
    assert engine.durable.count(f"queue_job:{queue}") == 0
    depths = engine.hot.depths(queue, now_ms())
    assert (depths.ready, depths.delayed, depths.active) == (0, 0, 0)


@pytest.mark.parametrize("case", BAD_OPTIONS, ids=list(BAD_OPTIONS))
def test_add_refuses_an_option_out_of_bounds(engine: Engine, case: str):
    options, message = BAD_OPTIONS[case]
    q = engine.queue("bounds")
    with pytest.raises(InvalidJob, match=message):
        q.add({"x": 1}, **options)
    assert_nothing_written(engine)


@pytest.mark.parametrize("case", BAD_OPTIONS, ids=list(BAD_OPTIONS))
def test_add_bulk_refuses_an_item_option_out_of_bounds(engine: Engine, case: str):
    options, message = BAD_OPTIONS[case]
    q = engine.queue("bounds")
    with pytest.raises(InvalidJob, match=message):
        q.add_bulk([{"data": 1}, {"data": 2, **options}])
    assert_nothing_written(engine)


BAD_PAYLOADS = {
    "nested-3000": (nested(3_000), "the job payload cannot be stored: the value nests deeper than 199 levels"),
    "nested-200": (nested(200), "nests deeper than 199 levels"),
    # Past the encoder's own recursion limit (near 1,000 on 3.12): the same message on every version.
    "nested-100000": (nested(100_000), "the job payload cannot be stored: the value nests deeper than 199 levels"),
    "nul": ({"a": "x\x00y"}, r"the job payload cannot be stored: a string holds a NUL character"),
    "nul-key": ({"\x00": 1}, "NUL character"),
    "surrogate": ({"a": "\udc00"}, r"the job payload cannot be stored: a string holds a lone surrogate"),
    "nan": ({"a": NAN}, "not JSON-serialisable"),
}


@pytest.mark.parametrize("case", BAD_PAYLOADS, ids=list(BAD_PAYLOADS))
def test_add_and_add_bulk_refuse_a_payload_no_plane_stores(engine: Engine, case: str):
    payload, message = BAD_PAYLOADS[case]
    q = engine.queue("bounds")
    with pytest.raises(InvalidJob, match=message):
        q.add(payload)
    with pytest.raises(InvalidJob, match=message):
        q.add_bulk([{"fine": 1}, payload])  # the plain path, which encodes rows itself
    with pytest.raises(InvalidJob, match=message):
        q.add_bulk([payload, {"data": 1, "priority": 2}])  # the path with options
    assert_nothing_written(engine)


def test_values_at_the_bounds_are_accepted_and_run(engine: Engine):
    q = engine.queue("bounds")
    deep = q.add(nested(199))
    assert engine.durable.get("queue_job:bounds", deep.id).value["data"] == nested(199)
    far = q.add({}, run_at=MAX_EPOCH_MS - 1, attempts=1000, timeout=1e-4, job_id="a/../b.c",
                correlation_id="ü-1", tags=["t" * 200])
    assert far.status == "delayed" and far.timeout_ms == 1
    assert q.add({}, delay=timedelta(days=36_500)).status == "delayed"
    assert q.add({}, run_at=datetime(9999, 12, 31, tzinfo=UTC)).status == "delayed"
    assert engine.hot.depths("bounds", now_ms()).delayed == 3


BAD_DECLARATIONS = {
    "lease-nan": ({"lease": NAN}, "lease must be a finite number"),
    "lease-inf": ({"lease": INF}, "lease must be at most"),
    "lease-zero": ({"lease": 0}, "lease must be positive"),
    "timeout-nan": ({"timeout": NAN}, "timeout must be a finite number"),
    "timeout-inf": ({"timeout": INF}, "timeout must be at most"),
    "remove_on_complete-nan": ({"remove_on_complete": NAN}, "remove_on_complete must be a finite number"),
    "remove_on_complete-inf": ({"remove_on_complete": INF}, "remove_on_complete must be at most"),
    "backoff-inf": ({"backoff": INF}, "backoff must be at most"),
    "retries-huge": ({"retries": 10**30}, "retries must be an integer from 0 to 999"),
    "concurrency-huge": ({"concurrency": 100_000}, "concurrency must be an integer from 1 to 1,000"),
    "concurrency-zero": ({"concurrency": 0}, "concurrency must be an integer from 1"),
    "priority-huge": ({"priority": 10**6}, "priority must be an integer from -1000 to 1000"),
    "throttle-nan": ({"throttle": (5, NAN)}, "throttle must be"),
    "throttle-inf": ({"throttle": (5, INF)}, "throttle must be"),
    "tag-control": ({"tags": ["a\tb"]}, "a tag .* control character"),
}


@pytest.mark.parametrize("case", BAD_DECLARATIONS, ids=list(BAD_DECLARATIONS))
def test_queue_declaration_refuses_options_out_of_bounds(engine: Engine, case: str):
    options, message = BAD_DECLARATIONS[case]
    with pytest.raises(ConfigurationError, match=f"Queue 'declared': {message}"):
        engine.queue("declared", **options)
    assert "declared" not in engine.registry.queues


@pytest.mark.parametrize("name", ["a\nb", "tab\there", "nul\x00", "bell\x07", "del\x7f", "lone\ud800"])
def test_queue_names_with_control_characters_or_lone_surrogates_are_refused(engine: Engine, name: str):
    with pytest.raises(ConfigurationError, match=r"Queue name .* (cannot be used|must be)"):
        engine.queue(name)


def test_queue_names_with_url_hostile_characters_stay_allowed(engine: Engine):
    for name in ("a/b", "..", "x?y#z", "100%", "ünï cödé"):
        q = engine.queue(name)
        job = q.add({"n": name}, job_id="../x")
        assert engine.durable.get(f"queue_job:{name}", job.id).value["data"] == {"n": name}

"""The record TypedDicts name exactly the keys the code writes: mypy checks every use of
a RunValue or JobValue against them, so a key added to a record must be added there too."""

from __future__ import annotations

from typing import NotRequired, get_origin, get_type_hints

from oqronkit.queues.backoff import Backoff, BackoffValue
from oqronkit.queues.jobs import Job, JobValue
from oqronkit.queues.runs import ErrorValue, RunValue, describe_error, new_run


def keys(typed_dict: type) -> tuple[set[str], set[str]]:
    """(required, optional) keys, read from the annotations: ``from __future__ import
    annotations`` leaves ``__required_keys__`` unaware of NotRequired."""
    hints = get_type_hints(typed_dict, include_extras=True)
    optional = {key for key, hint in hints.items() if get_origin(hint) is NotRequired}
    return set(hints) - optional, optional


def a_run(**links: str) -> RunValue:
    return new_run(name="emails", module="queue", trigger="queue", input={"n": 1}, attempts=1, app="p",
                   environment="test", worker_id="w-1", **links)


def test_a_run_has_every_required_key_and_only_known_ones():
    required, optional = keys(RunValue)
    assert set(a_run()) == required
    linked = a_run(job_id="j-1", correlation_id="c-1")
    assert set(linked) - required == {"jobId", "correlationId"} <= optional


def test_a_job_value_is_every_job_field_under_its_key():
    required, optional = keys(JobValue)
    assert set(Job(id="j-1", queue="emails", data=None).to_value()) == required
    assert optional == set()


def test_a_described_error_and_a_backoff_have_their_keys():
    required, optional = keys(ErrorValue)
    assert set(describe_error(ValueError("boom"))) == required | {"traceback"}
    assert {"traceback", "attempt", "runId"} == optional
    assert set(Backoff().to_value()) == keys(BackoffValue)[0]

"""``--metrics-port``: a worker's counters and histograms, read over its HTTP endpoint
after a burst of jobs (SQLite and Postgres), and the rescuer's count."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from oqronkit.clock import now_ms
from oqronkit.telemetry.worker_metrics import WorkerMetrics

from .conftest import built_engine, fast_services, running, wait_until


def read(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def sample(samples: dict, metric: str, /, **labels: str) -> float:
    return samples.get((metric, tuple(sorted(labels.items()))), 0.0)


@pytest.mark.parametrize("mode", ["sqlite", "postgres"])
def test_a_burst_of_jobs_is_counted(mode: str, request: pytest.FixtureRequest, tmp_path, scope_names):
    with built_engine(mode, request, tmp_path, scope_names[0]) as engine:
        mails = engine.queue("mails", concurrency=4, retries=1, backoff=0.05)

        @mails.handler
        def send(ctx):
            if ctx.data.get("fail"):
                raise ValueError("no mailbox")
            return {"sent": True}

        mails.add_bulk([{"n": i} for i in range(30)])
        mails.add_bulk([{"fail": True, "n": i} for i in range(3)])
        metrics = WorkerMetrics()
        port = metrics.serve(0)
        try:
            with running(engine, metrics=metrics):
                wait_until(lambda: sample(read(port), "oqron_jobs_dead_total", queue="mails") == 3
                           and sample(read(port), "oqron_jobs_completed_total", queue="mails") == 30, timeout=20)
            samples = read(port)
        finally:
            metrics.close()
    q = {"queue": "mails"}
    assert sample(samples, "oqron_jobs_started_total", **q) == 36  # 30 + 3 x 2 attempts
    assert sample(samples, "oqron_jobs_completed_total", **q) == 30
    assert sample(samples, "oqron_jobs_failed_total", **q) == 6
    assert sample(samples, "oqron_jobs_retried_total", **q) == 3
    assert sample(samples, "oqron_jobs_dead_total", **q) == 3
    assert sample(samples, "oqron_run_duration_seconds_count", queue="mails", status="completed") == 30
    assert sample(samples, "oqron_run_duration_seconds_count", queue="mails", status="failed") == 6
    assert sample(samples, "oqron_run_duration_seconds_sum", queue="mails", status="completed") > 0
    assert sample(samples, "oqron_settle_latency_seconds_count", **q) == 36
    claims = sample(samples, "oqron_claim_batch_size_count", **q)
    assert 1 <= claims <= 36 and sample(samples, "oqron_claim_batch_size_sum", **q) == 36
    assert sample(samples, "oqron_lease_rescues_total") == 0


def test_the_rescuer_is_counted(request: pytest.FixtureRequest, tmp_path, scope_names):
    with built_engine("sqlite", request, tmp_path, scope_names[0]) as engine:
        mails = engine.queue("mails", retries=2)
        mails.handler(lambda ctx: None)
        job = mails.add({"n": 1})
        # A worker that died holding the job: its lease lapses unrenewed.
        assert engine.hot.claim("mails", worker_id="ghost", limit=1, lease_ms=50, now=now_ms())
        metrics = WorkerMetrics()
        port = metrics.serve(0)
        try:
            with running(engine, metrics=metrics) as process:
                fast_services(process)
                wait_until(lambda: sample(read(port), "oqron_lease_rescues_total") >= 1, timeout=15)
                wait_until(lambda: sample(read(port), "oqron_jobs_completed_total", queue="mails") == 1)
        finally:
            metrics.close()
    assert job


def test_the_endpoint_listens_on_loopback_only_by_default():
    metrics = WorkerMetrics()
    port = metrics.serve(0)
    try:
        assert metrics._server.server_address[0] == "127.0.0.1"
        assert sample(read(port), "oqron_lease_rescues_total") == 0
    finally:
        metrics.close()

"""Module logs (issue 22): the engine's own log records of the modules turned on are
kept in module_logs:<module> (kind log) with an expiry, in batches off the job's path,
bounded per module; other modules' records and the writer's own are not kept."""

from __future__ import annotations

import logging

import pytest

from oqronkit import ConfigurationError, Engine, OqronConfig
from oqronkit import module_logs as module_logs_module
from oqronkit.config import config_from_env
from oqronkit.module_logs import DAY_MS, module_of
from tests.engine.queue.conftest import MODES, built_engine

WORKER = logging.getLogger("oqronkit.worker.consumer")


@pytest.fixture(params=MODES)
def engine(request, tmp_path, scope_names):
    with built_engine(request.param, request, tmp_path, scope_names[0], module_logs=("worker", "cron")) as eng:
        assert eng.durable is not None  # opening the durable plane attaches the handler
        yield eng


def kept(engine: Engine, module: str) -> list:
    engine._module_logs.flush()
    return engine.durable.list(f"module_logs:{module}", limit=1000).records


def test_records_of_a_module_turned_on_are_kept_with_their_ids_and_an_expiry(engine: Engine):
    WORKER.warning("could not claim from %s", "emails\x00", extra={"action": "worker.claim_failed", "queue": "emails"})
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("oqronkit.scheduler.executor").exception("cron run failed",
                                                                    extra={"action": "scheduler.run_failed"})
    logging.getLogger("oqronkit.topics.dispatch").warning("not kept", extra={"action": "topic.dispatch_failed"})
    WORKER.debug("below INFO: not kept")
    (worker,) = kept(engine, "worker")
    assert worker.record_kind == "log"
    assert worker.value["message"] == "could not claim from emails\ufffd" and worker.value["level"] == "warning"
    assert worker.value["action"] == "worker.claim_failed" and worker.value["queue"] == "emails"
    assert worker.value["module"] == "worker" and worker.value["logger"] == "oqronkit.worker.consumer"
    assert 6 * DAY_MS < worker.expires_at - worker.value["at"] <= 7 * DAY_MS + 60_000
    (cron,) = kept(engine, "scheduler")  # "cron" names the scheduler's records
    assert cron.value["error"] == "ValueError: boom" and cron.value["level"] == "error"
    assert kept(engine, "topic") == []


def test_a_module_buffers_at_most_max_pending_and_counts_what_it_dropped(engine: Engine, monkeypatch):
    handler = engine._module_logs
    handler.flush()
    monkeypatch.setattr(module_logs_module, "MAX_PENDING", 5)
    handler._pending.clear()
    handler._pending.default_factory = lambda: module_logs_module.deque(maxlen=5)
    for i in range(8):
        WORKER.info("line %d", i, extra={"action": "worker.note"})
    assert handler.dropped["worker"] == 3
    assert sorted(r.value["message"] for r in kept(engine, "worker")) == [f"line {i}" for i in range(3, 8)]


def test_a_write_that_fails_is_logged_not_kept_and_the_flusher_goes_on(engine: Engine, monkeypatch, caplog):
    from oqronkit.errors import BackendUnavailable

    def down(*args, **kwargs):
        raise BackendUnavailable("durable plane down")

    handler = engine._module_logs
    monkeypatch.setattr(handler.durable, "put_many", down)
    WORKER.warning("lost in the outage", extra={"action": "worker.x"})
    with caplog.at_level(logging.WARNING, logger="oqronkit.module_logs"):
        handler.flush()  # does not raise
    assert "could not keep 1 worker log record(s)" in caplog.text
    monkeypatch.undo()
    WORKER.warning("after the outage", extra={"action": "worker.x"})
    assert [r.value["message"] for r in kept(engine, "worker")] == ["after the outage"]


def test_closing_the_engine_writes_what_is_buffered_and_removes_the_handler(tmp_path, scope_names, request):
    with built_engine("sqlite", request, tmp_path, scope_names[0], module_logs=("worker",)) as eng:
        durable = eng.durable
        handler = eng._module_logs
        WORKER.warning("last words", extra={"action": "worker.stop"})
        store_path = eng.config.database_url
    assert handler not in logging.getLogger("oqronkit").handlers
    reopened = Engine(OqronConfig(mode="sqlite", database_url=store_path, project=scope_names[0]))
    try:
        assert [r.value["message"] for r in reopened.durable.list("module_logs:worker").records] == ["last words"]
    finally:
        reopened.close()
    del durable


def test_modules_come_from_the_action_then_the_logger():
    def record(name: str, action: str | None = None) -> logging.LogRecord:
        rec = logging.LogRecord(name, logging.INFO, __file__, 1, "m", None, None)
        if action:
            rec.action = action
        return rec

    assert module_of(record("oqronkit.engine", "finisher.held")) == "worker"
    assert module_of(record("oqronkit.services.leader", "rescuer.rescued")) == "services"
    assert module_of(record("oqronkit.webhooks.delivery")) == "webhook"
    assert module_of(record("oqronkit.queues.queue")) == "queue"
    assert module_of(record("oqronkit.durable")) == "engine"


def test_the_setting_takes_aliases_all_and_the_environment_and_refuses_the_rest():
    assert OqronConfig(mode="memory", database_url=None, module_logs=["Cron", "queue"]).module_logs == \
        ("queue", "scheduler")
    assert "webhook" in OqronConfig(mode="memory", database_url=None, module_logs=("all",)).module_logs
    assert config_from_env({"OQRON_MODULE_LOGS": "worker, topic"}).module_logs == ("worker", "topic")
    for bad in ("worker", ["nope"], [1], ("worker", None)):
        with pytest.raises(ConfigurationError, match="module_logs must be a list"):
            OqronConfig(mode="memory", database_url=None, module_logs=bad)
    with pytest.raises(ConfigurationError, match="module_log_retention_days"):
        OqronConfig(mode="memory", database_url=None, module_log_retention_days=0)

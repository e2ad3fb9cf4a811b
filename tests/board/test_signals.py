"""The engine's lifecycle events as Django signals (oqronboard/signals.py): connected by
the app's ready() to the default registry that the bridge's engine uses, each sent once
per event (sender: the Queue class; the queue's name in ``queue``); a raising receiver stops neither the others
nor the worker."""

from __future__ import annotations

import threading
import uuid

import oqronkit
from oqronkit import lifecycle
from oqronkit.contrib.django import engine, signals
from oqronkit.worker import WorkerProcess


def test_lifecycle_events_are_sent_as_django_signals(settings, scope_names):
    settings.OQRON = {"MODE": "memory", "PROJECT": scope_names[0]}
    name = f"sig-{uuid.uuid4().hex[:8]}"
    seen: list[tuple[str, str, str]] = []
    lock = threading.Lock()

    def record(sender, queue, job, event, **kwargs):
        if queue == name:
            with lock:
                seen.append((event.name, sender, job.id))

    def broken(sender, **kwargs):
        raise RuntimeError("receiver bug")

    for signal in signals.SIGNALS.values():
        signal.connect(broken, weak=False)
        signal.connect(record, weak=False)
    try:
        board_engine = engine.get_engine()
        q = board_engine.queue(name, handler=lambda ctx: ctx.data, retries=0)
        done, gone = q.add({"n": 1}), q.add({"n": 2}, delay=3600)
        engine.engine_for(board_engine.config.project, board_engine.config.environment).controller(name) \
            .cancel(gone.id)  # the board's action path: a scoped engine fires the same callbacks
        worker = WorkerProcess(board_engine, queues=[name], burst=True, services=False, poll_interval=0.05)
        worker.run()
        assert lifecycle.drain(5)
        assert sorted(e for e, _, job_id in seen if job_id == done.id) == ["completed", "enqueued", "started"]
        assert sorted(e for e, _, job_id in seen if job_id == gone.id) == ["cancelled", "enqueued"]
        assert {sender for _, sender, _ in seen} == {oqronkit.Queue}
    finally:
        for signal in signals.SIGNALS.values():
            signal.disconnect(broken)
            signal.disconnect(record)
        board_engine.registry.queues.pop(name, None)
        engine.reset()


def test_a_signal_nobody_receives_costs_the_engine_no_callback():
    # A registered callback hands every event to the signals thread: a worker whose
    # events nobody receives must not pay for it.
    from oqronkit.queues.queue import default_registry

    def receive(sender, **kwargs):
        pass

    signal = signals.job_completed
    assert signal.receivers == [] and not signal.forwarding
    assert signal._send not in default_registry.listeners.of("completed")
    signal.connect(receive)
    try:
        assert signal.forwarding and signal._send in default_registry.listeners.of("completed")
        assert not signals.job_failed.forwarding  # each signal follows its own receivers
    finally:
        assert signal.disconnect(receive)
    assert not signal.forwarding and signal._send not in default_registry.listeners.of("completed")
    signal.connect(receive, dispatch_uid="test-uid")
    assert signal.forwarding
    assert signal.disconnect(dispatch_uid="test-uid") and not signal.forwarding

"""Crons and schedules: durable pointers, one leader, one run per slot.

Declare with :func:`cron` / :func:`schedule` (re-exported as ``oqronkit.cron`` and
``oqronkit.schedule``); the elected leader among the worker processes fires them
(:class:`Scheduler`, ticked by :mod:`oqronkit.services.leader`).

Storage, exactly the spec's namespaces: the definition in ``cron`` / ``schedule``
(record kind ``definition``); pointer (``nextRunAt``), pause, version, counters
(``missed``, ``skipped``, ``run``, ``manual``) and pending work (catch-up backlog,
retries, run-now requests) in ``cron_durable`` / ``schedule_durable`` (``control``). Every
fire is a run record (module ``cron`` / ``schedule``), without a job unless ``as_job``.

Semantics, in one place:

* **One run per slot.** The run record is the claim: its id comes from the slot
  (``cron:<name>:<slot ms>``) and it is inserted if absent, in status ``running``, before
  the handler runs; the pointer advances after the claim. Two leaders at once (a
  split brain during failover) both try the insert; one wins.
* **A dead leader** leaves either a pointer behind its claims (the next leader finds the
  slots claimed and only advances) or a run still ``running``. The latter, once absent
  from the hot plane's live-run group past its 5 s TTL, is marked ``failed``
  (``LeaderLost``) and re-run as a new attempt if ``retries`` allow, plus one recovery
  attempt under ``missed="run-once"``/``"run-all"`` (at-least-once); under ``"skip"`` it
  stays failed (at-most-once). Never left running, never silently dropped.
* **Missed slots** (late by more than 2 s) follow ``missed``: ``skip``; ``run-once`` (the
  latest, unless an on-time slot already runs); ``run-all`` (the latest
  ``max_missed_runs``, within ``catch_up_window``, one at a time unless ``overlap="allow"``).
* **DST**: fixed-time expressions follow the wall clock: a time inside the spring-forward
  gap fires once at the end of the gap (02:30 -> 03:00, like cronie), a time repeated on
  fall-back fires once (its first occurrence). Interval-like expressions (``*`` in the
  minute or hour field) and ``every=`` follow real elapsed time. See :mod:`.timing`.
* **Pause** is cluster-wide and persisted; resuming restarts from the next slot (the
  paused slots are dropped). **Run-now** runs even while paused.
* **Versions**: code newer than stored updates the definition and keeps pointer, pause and
  counters; code older keeps the stored definition and logs a warning.
"""

from __future__ import annotations

from .control import cancel_schedule, load, request_run, set_paused
from .declare import Cron, Schedule, cron, preview, registry_for, schedule
from .definition import Definition
from .scheduler import Scheduler

__all__ = [
    "Cron",
    "Definition",
    "Schedule",
    "Scheduler",
    "cancel_schedule",
    "cron",
    "load",
    "preview",
    "registry_for",
    "request_run",
    "schedule",
    "set_paused",
]

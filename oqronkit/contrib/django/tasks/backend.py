"""``OqronBackend``: Django's tasks framework (``django.tasks``) on oqronkit's queues.

Each task queue name is one oqronkit queue (``OPTIONS["QUEUE_PREFIX"]`` + the name,
``tasks.default`` by default), declared on first use with :func:`dispatch` as its
handler, so ``runworker`` runs tasks like any job and the board shows them like any
queue. A task result's id is its job id.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any, ParamSpec, TypeVar, cast

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.tasks import Task, TaskResult, TaskResultStatus
from django.tasks.backends.base import BaseTaskBackend
from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
from django.tasks.signals import task_enqueued
from django.utils import timezone
from django.utils.json import normalize_json

import oqronkit
from oqronkit.clock import now_ms
from oqronkit.codec import dumps_compact
from oqronkit.contrib.django import engine

from . import payload
from .dispatch import dispatch
from .listening import would_reach_anyone
from .options import BackendOptions, oqron_priority, read_options
from .results import plain_result
from .task import OqronTask

_P = ParamSpec("_P")
_R = TypeVar("_R")


class OqronBackend(BaseTaskBackend):
    """Tasks as oqronkit jobs: durable, retried as configured, run by ``runworker``."""

    task_class = OqronTask
    supports_defer = True
    supports_async_task = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.settings = read_options(self.options, self.queues)
        self._declared: dict[str, oqronkit.Queue] = {}
        self._lock = threading.Lock()

    @property
    def supports_get_result(self) -> bool:  # type: ignore[override]
        """True where results are read from SQL (sqlite, postgres, redis-postgres modes)."""
        try:
            return engine.get_config().mode not in engine.NON_SQL_MODES
        except oqronkit.ConfigurationError:
            return False

    # -- queues --------------------------------------------------------------------------

    def oqron_queue_names(self) -> list[str]:
        """The oqronkit queues of this backend's task queues, sorted."""
        return sorted(self.settings.queue_name(q) for q in self.queues)

    def queue_for(self, task_queue: str) -> oqronkit.Queue:
        """The oqronkit queue of ``task_queue``, declared on the default engine on first use."""
        declared = self._declared.get(task_queue)
        if declared is not None:
            return declared
        self._refuse_if_misconfigured()
        with self._lock:
            if task_queue not in self._declared:
                self._declared[task_queue] = declare_queue(self.settings, task_queue)
            return self._declared[task_queue]

    def declare_queues(self) -> list[oqronkit.Queue]:
        """Declare every configured task queue (``runworker`` consumes the declared ones)."""
        return [self.queue_for(q) for q in sorted(self.queues)]

    def _refuse_if_misconfigured(self) -> None:
        if self.settings.problems:
            raise ImproperlyConfigured(f"TASKS[{self.alias!r}]: {' '.join(self.settings.problems)}")

    # -- enqueue -------------------------------------------------------------------------

    def enqueue(self, task: Task[_P, _R], args: list[Any], kwargs: dict[str, Any]) -> TaskResult[_P, _R]:
        """Add the task as a job and return its READY result. Inside ``transaction.atomic()``
        on the engine's alias the job joins the transaction: it exists once that commits."""
        self.validate_task(task)
        # TypeError for what JSON cannot hold, as Django's own backends raise.
        plain_args, plain_kwargs = cast(list[Any], normalize_json(args)), cast(dict[str, Any], normalize_json(kwargs))
        engine.get_engine()  # configured from these settings: the queue adds through the default engine
        queue = self.queue_for(task.queue_name)
        options = task.job_options() if isinstance(task, OqronTask) else {}
        enqueued = now_ms()
        data = payload.build(task, plain_args, plain_kwargs, backend=self.alias, enqueued_ms=enqueued, options=options)
        job = queue.add(data, **_add_options(task, options))
        if "job_id" in options and job.data.get("token") != data.get("token"):  # the id was taken: its result
            return cast("TaskResult[_P, _R]", self.get_result(job.id))
        result = plain_result(
            task=task, id=job.id, status=TaskResultStatus.READY, enqueued_at=payload.from_ms(enqueued),
            started_at=None, last_attempted_at=None, finished_at=None, args=plain_args, kwargs=plain_kwargs,
            backend=self.alias, errors=[], worker_ids=[],
        )
        if would_reach_anyone(task_enqueued, logging.DEBUG):
            task_enqueued.send(type(self), task_result=result)
        return cast("TaskResult[_P, _R]", result)

    # -- results -------------------------------------------------------------------------

    def get_result(self, result_id: str) -> TaskResult[..., Any]:
        """The task's result from its job and runs (TaskResultDoesNotExist if neither is found)."""
        from .results import read_result  # the board's models: loaded once apps are ready

        if not self.supports_get_result:
            raise NotImplementedError(
                f"OQRON mode {engine.get_config().mode!r} keeps jobs and runs outside SQL, where "
                "get_result reads them; use sqlite, postgres or redis-postgres."
            )
        if not isinstance(result_id, str) or not result_id or len(result_id) > 200:
            raise TaskResultDoesNotExist(result_id)
        return read_result(result_id, self.oqron_queue_names())

    # -- checks --------------------------------------------------------------------------

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        return [*super().check(**kwargs), *check_backend(self)]


def declare_queue(options: BackendOptions, task_queue: str) -> oqronkit.Queue:
    """The dispatcher queue of ``task_queue`` on the default registry, replacing one this
    backend declared before (settings changed), never a user's own queue of that name."""
    from oqronkit.queues.queue import default_registry

    name = options.queue_name(task_queue)
    existing = default_registry.queues.get(name)
    if existing is not None and existing.fn is not None and existing.fn is not dispatch:
        raise ImproperlyConfigured(f"The oqronkit queue {name!r} of task queue {task_queue!r} already has "
                                   "another handler; set OPTIONS['QUEUE_PREFIX'] to keep tasks apart.")
    if existing is not None:
        default_registry.queues.pop(name, None)  # ours: declared again with these settings
    try:
        return oqronkit.Queue(name, handler=dispatch, **options.queue_options)
    except oqronkit.ConfigurationError as exc:
        raise ImproperlyConfigured(f"Task queue {task_queue!r}: {exc}") from exc


def _add_options(task: Any, options: dict[str, Any]) -> dict[str, Any]:
    """``Queue.add`` options for one task: priority, run_after and the job options."""
    add: dict[str, Any] = {"priority": oqron_priority(task.priority)}
    if task.run_after is not None:
        add["run_at"] = _aware(task.run_after)
    if "retries" in options:
        add["attempts"] = int(options["retries"]) + 1
    for name in ("backoff", "timeout", "job_id"):
        if name in options:
            add[name] = options[name]
    if "backoff" in options:
        try:
            dumps_compact(options["backoff"])
        except (TypeError, ValueError) as exc:  # it travels in the payload
            raise InvalidTask(f"A task's backoff must be a number or a dict, got {options['backoff']!r}.") from exc
    return add


def _aware(moment: datetime) -> datetime:
    """``run_after`` as an aware datetime (a naive one under USE_TZ=False is local time)."""
    if timezone.is_aware(moment) or settings.USE_TZ:
        return moment
    return timezone.make_aware(moment, timezone.get_default_timezone())


# -- system checks of an alias (Django runs them through backend.check()) --------------
# oqron.E101: bad OPTIONS or QUEUES (unknown key, empty QUEUES, a queue option the engine
# refuses); oqron.E102: two task queues, of this alias or another OqronBackend alias,
# would share one oqronkit queue.

HINT = "See the docs, docs/how-to/django-tasks.md: OPTIONS takes QUEUE_PREFIX and oqronkit queue options."


def check_backend(backend: OqronBackend) -> list[checks.CheckMessage]:
    """The problems of one alias's settings, each with the engine's own message."""
    where = f"TASKS[{backend.alias!r}]"
    found: list[checks.CheckMessage] = [
        checks.Error(f"{where}: {problem}", hint=HINT, id="oqron.E101") for problem in backend.settings.problems]
    if found:
        return found
    try:
        backend.declare_queues()  # the engine checks every queue option at declaration
    except ImproperlyConfigured as exc:
        found.append(checks.Error(f"{where}: {exc}", hint=HINT, id="oqron.E101"))
    clash = _shared_queue(backend)
    if clash:
        found.append(checks.Error(f"{where}: {clash}", hint="Give each alias its own QUEUE_PREFIX.", id="oqron.E102"))
    return found


def _shared_queue(backend: OqronBackend) -> str | None:
    from django.tasks import task_backends


    mine = set(backend.oqron_queue_names())
    for other in task_backends.all():
        if other is backend or not isinstance(other, OqronBackend):
            continue
        shared = sorted(mine & set(other.oqron_queue_names()))
        if shared:
            return f"its queue(s) {', '.join(shared)} are also alias {other.alias!r}'s."
    return None

"""System checks of an ``OqronBackend`` alias (Django runs them through ``backend.check()``).

``oqron.E101``: bad ``OPTIONS`` or ``QUEUES`` (unknown key, empty QUEUES, a queue option
the engine refuses); ``oqron.E102``: two task queues, of this alias or another
OqronBackend alias, would share one oqronkit queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core import checks
from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from .backend import OqronBackend

HINT = "See README.md, \"Django tasks (django.tasks)\": OPTIONS takes QUEUE_PREFIX and oqronkit queue options."


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

    from .backend import OqronBackend

    mine = set(backend.oqron_queue_names())
    for other in task_backends.all():
        if other is backend or not isinstance(other, OqronBackend):
            continue
        shared = sorted(mine & set(other.oqron_queue_names()))
        if shared:
            return f"its queue(s) {', '.join(shared)} are also alias {other.alias!r}'s."
    return None

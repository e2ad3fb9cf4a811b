"""Health endpoints for load balancers and Kubernetes probes, without a login.

- ``/health/live``: the process answers (200, no plane touched).
- ``/health/ready``: the durable plane and the hot plane each answered a read within
  :data:`READY_DEADLINE_S`; 503 otherwise. The answer names each plane's state only
  (``ok``, ``down``, ``timeout``): never a URL, an error message or a row.

Each plane is probed on a daemon thread so a hanging server (a stopped Redis, a
firewalled Postgres) costs the probe its deadline, not the driver's own timeouts; at
most one probe per plane is in flight, so a hang never piles up threads: the next
request waits on the same probe.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, wait

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from oqronkit.clock import now_ms
from oqronkit.contrib.django import engine

logger = logging.getLogger(__name__)
READY_DEADLINE_S = 0.8
# Read-only probes of keys no one writes: reachability, not data.
PROBE_NAMESPACE, PROBE_ID, PROBE_LOCK = "queue", "health-probe", "health-probe"


def _durable_probe() -> None:
    engine.get_durable().get(PROBE_NAMESPACE, PROBE_ID)


def _hot_probe() -> None:
    engine.get_engine().hot.lock_owner(PROBE_LOCK, now_ms())


PROBES: dict[str, Callable[[], None]] = {"durable": _durable_probe, "hot": _hot_probe}
# Per plane: the config it probes (a reset engine gets fresh probes) and the probe.
_in_flight: dict[str, tuple[object, Future[None]]] = {}
_in_flight_lock = threading.Lock()


def _run(future: Future[None], probe: Callable[[], None]) -> None:
    try:
        probe()
    except BaseException as exc:  # any failure means "not reachable"; the reason goes to the log only
        future.set_exception(exc)
    else:
        future.set_result(None)


def _probe(plane: str, config: object) -> Future[None]:
    """The plane's probe in flight for this config, or a new one started."""
    with _in_flight_lock:
        probed, current = _in_flight.get(plane, (None, None))
        if current is not None and probed is config and not current.done():
            return current
        future: Future[None] = Future()
        _in_flight[plane] = (config, future)
    threading.Thread(target=_run, args=(future, PROBES[plane]), name=f"oqron-health-{plane}", daemon=True).start()
    return future


def readiness(deadline_s: float = READY_DEADLINE_S) -> dict[str, str]:
    """Each plane's state: ``ok``, ``down`` (it answered with an error) or ``timeout``."""
    config = engine.get_config()
    futures = {plane: _probe(plane, config) for plane in PROBES}
    wait(futures.values(), timeout=deadline_s)
    states = {}
    for plane, future in futures.items():
        if not future.done():
            states[plane] = "timeout"
        elif (exc := future.exception()) is not None:
            logger.warning("health: the %s plane is not reachable: %s", plane, exc,
                           extra={"action": "board.health_down"})
            states[plane] = "down"
        else:
            states[plane] = "ok"
    return states


@login_not_required
@require_GET
def live(request: HttpRequest) -> JsonResponse:
    """The process is up and serving requests."""
    return JsonResponse({"status": "live"})


@login_not_required
@require_GET
def ready(request: HttpRequest) -> JsonResponse:
    """200 when both planes answered within the deadline, else 503."""
    try:
        engine.get_config()
    except Exception:  # a bad configuration is "not ready"; manage.py check names it
        return JsonResponse({"status": "not ready", "checks": {"config": "invalid"}}, status=503)
    checks = readiness()
    ok = all(state == "ok" for state in checks.values())
    return JsonResponse({"status": "ready" if ok else "not ready", "checks": checks}, status=200 if ok else 503)

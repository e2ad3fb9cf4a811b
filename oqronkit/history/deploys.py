"""Deploy markers: a worker records its code version when it starts, and a durable
marker is kept only when that version differs from the last one recorded (a
compare-and-set on the last version, so many workers starting together keep one)."""

from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Final

from ..backends.types import ABSENT
from ..clock import now_ms
from ..durable import DurablePlane
from ..errors import OqronError
from ..namespaces import METRICS_DEPLOYS, METRICS_STATE

logger = logging.getLogger(__name__)
VERSION_ID: Final = "version"
#: Markers a history shows at most (the newest).
SHOWN: Final = 200
DEPLOY_RETENTION_MS: Final = 730 * 86_400_000
_GIT_TIMEOUT_S: Final = 0.5


@dataclass(frozen=True)
class DeployMarker:
    at: int
    version: str
    previous: str | None
    worker: str

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "version": self.version, "previous": self.previous, "worker": self.worker}


def code_version(configured: str | None) -> str:
    """OQRON_VERSION (``configured``), else the git commit of the working directory when
    ``git`` answers within half a second, else the installed oqronkit's version."""
    if configured:
        return configured
    try:
        done = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                              timeout=_GIT_TIMEOUT_S, check=False)
        commit = done.stdout.strip()
        if done.returncode == 0 and commit:
            return f"git:{commit}"
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return f"oqronkit {metadata.version('oqronkit')}"  # the installed distribution's (no import cycle)
    except metadata.PackageNotFoundError:
        return "unknown"


def record_deploy(durable: DurablePlane, version: str, *, worker: str, at: int | None = None) -> bool:
    """Keep a marker when ``version`` is not the last version recorded; True when kept."""
    when = now_ms() if at is None else at
    found = durable.get(METRICS_STATE, VERSION_ID)
    previous = str(found.value.get("version")) if found is not None else None
    if previous == version:
        return False
    expect: dict[str, Any] | Any = ABSENT if found is None else {"version": previous}
    if not durable.compare_and_set(METRICS_STATE, VERSION_ID, expect=expect,
                                   value={"version": version, "at": when, "worker": worker}):
        return False  # another worker recorded a version in between: theirs is the marker
    marker = DeployMarker(when, version, previous, worker)
    durable.put(METRICS_DEPLOYS, f"{when:013d}|{worker}", marker.to_json(), expires_at=when + DEPLOY_RETENTION_MS)
    logger.info("deploy marker: version %s (was %s)", version, previous, extra={"action": "history.deploy"})
    return True


def record_deploy_quietly(durable: DurablePlane, configured: str | None, *, worker: str) -> None:
    """:func:`record_deploy` at a worker's start: a failure is logged, never raised."""
    try:
        record_deploy(durable, code_version(configured), worker=worker)
    except OqronError as exc:
        logger.warning("could not record the deploy marker: %s", exc, extra={"action": "history.deploy_failed"})


def deploy_markers(durable: DurablePlane, *, since: int) -> list[DeployMarker]:
    """The markers recorded at or after ``since``, oldest first."""
    page = durable.list(METRICS_DEPLOYS, order="inserted", descending=True, limit=SHOWN)
    markers = []
    for record in page.records:
        value = record.value
        at = value.get("at")
        if isinstance(at, int) and at >= since:
            previous = value.get("previous")
            markers.append(DeployMarker(at, str(value.get("version", "")),
                                        None if previous is None else str(previous), str(value.get("worker", ""))))
    return sorted(markers, key=lambda m: m.at)

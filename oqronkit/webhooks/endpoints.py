"""A webhook's endpoints: one ``definition`` record each in ``webhook_endpoints:<webhook>``,
id the endpoint's id. Changed at run time (here, or by the board through the engine)
with a compare-and-set on ``version``, so two writers never lose each other's change.

The record holds the ids of the secrets that sign for the endpoint (``secretIds``; null:
every secret of the webhook), never a secret: they live in the processes' configuration.
So do the values of its secret headers: the record keeps their names, masked, and the ids
of the header secrets that hold them (``secretHeaders``; see header_secrets.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict
from urllib.parse import urlsplit

from ..clock import now_ms
from ..codec import text_problem
from ..durable import DurablePlane
from ..errors import ConfigurationError, InvalidState, JobNotFound
from ..ids import new_id
from ..namespaces import webhook_endpoints_namespace
from .header_secrets import MASK, HeaderSecret, check_value, declared_id, is_credential, moved_out, shown_headers
from .patterns import check_patterns

ENDPOINT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")
MAX_URL_LENGTH = 2000
MAX_HEADERS = 32
# Ours to set (signing, framing), or meant for a proxy, and no proxy is ever used.
FORBIDDEN_HEADERS = frozenset({"proxy-authorization", "host", "content-length", "content-type",
                               "transfer-encoding", "connection", "user-agent"})
MAX_REASON_LENGTH = 500


class RateLimitValue(TypedDict):
    count: int
    seconds: float


class EndpointValue(TypedDict):
    """An endpoint's record, as stored."""

    id: str
    webhook: str
    url: str
    events: list[str]
    enabled: bool
    disabledReason: str | None
    disabledAt: int | None
    secretIds: list[str] | None
    headers: dict[str, str]
    secretHeaders: dict[str, str]
    rateLimit: RateLimitValue | None
    allowPrivate: bool
    description: str
    createdAt: int
    updatedAt: int
    version: int


@dataclass(frozen=True, slots=True)
class Endpoint:
    """An endpoint as read from its record: ``headers`` as every reader shows them (a
    secret one's value is :data:`~oqronkit.webhooks.header_secrets.MASK`),
    ``secret_headers`` the header secret id of each secret one."""

    id: str
    webhook: str
    url: str
    events: tuple[str, ...]
    enabled: bool
    disabled_reason: str | None
    secret_ids: tuple[str, ...] | None
    headers: dict[str, str]
    rate_limit: RateLimitValue | None
    allow_private: bool
    description: str
    created_at: int
    updated_at: int
    version: int
    secret_headers: dict[str, str] = field(default_factory=dict)
    # Credential values an older version stored in the record: sent, never shown.
    left_in_record: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_value(cls, value: Mapping[str, Any]) -> Endpoint:
        secret_ids = value.get("secretIds")
        refs = value.get("secretHeaders") or {}
        headers, left = shown_headers(value.get("headers") or {}, refs)
        return cls(id=value["id"], webhook=value["webhook"], url=value["url"], events=tuple(value["events"]),
                   enabled=bool(value.get("enabled", True)), disabled_reason=value.get("disabledReason"),
                   secret_ids=None if secret_ids is None else tuple(secret_ids),
                   headers=headers, secret_headers=dict(refs), left_in_record=left,
                   rate_limit=value.get("rateLimit"), allow_private=bool(value.get("allowPrivate", False)),
                   description=value.get("description") or "", created_at=value.get("createdAt", 0),
                   updated_at=value.get("updatedAt", 0), version=value.get("version", 1))


#: What ``add_endpoint`` / ``update_endpoint`` accept, and the record key each sets.
FIELDS = {"url": "url", "events": "events", "secret_ids": "secretIds", "headers": "headers",
          "rate_limit": "rateLimit", "allow_private": "allowPrivate", "description": "description"}


def check_fields(webhook: str, endpoint_id: str, fields: Mapping[str, Any], *,
                 declared: dict[str, str] | None = None) -> dict[str, Any]:
    """The record keys and values for ``fields`` (add_endpoint's keyword arguments),
    checked: ConfigurationError naming the endpoint and the fix. ``declared``: the
    webhook's header secrets when the endpoint is declared in code (a credential value
    given there joins them); None at run time (such a value is refused)."""
    what = f"Webhook {webhook!r} endpoint {endpoint_id!r}"
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise ConfigurationError(f"{what}: unknown option(s) {', '.join(sorted(unknown))}; "
                                 f"known: {', '.join(FIELDS)}.")
    checks = {"url": _url, "events": lambda v, w: check_patterns(v, what=w), "secret_ids": _secret_ids,
              "rate_limit": _rate_limit, "allow_private": _flag, "description": _description}
    checked: dict[str, Any] = {FIELDS[name]: checks[name](value, what) for name, value in fields.items()
                               if name != "headers"}
    if "headers" in fields:
        checked["headers"], checked["secretHeaders"] = _headers(fields["headers"], what, endpoint_id, declared)
    return checked


def check_id(endpoint_id: Any) -> str:
    if not isinstance(endpoint_id, str) or not ENDPOINT_ID.match(endpoint_id):
        raise ConfigurationError(f"Endpoint id {endpoint_id!r} must be 1-64 letters, digits, '_', '.' or '-', "
                                 "starting with a letter or digit.")
    return endpoint_id


def new_endpoint_value(webhook: str, endpoint_id: str | None, fields: Mapping[str, Any], *,
                       declared: dict[str, str] | None = None) -> EndpointValue:
    """A new endpoint's record (enabled, version 1) from add_endpoint's arguments
    (``declared``: see :func:`check_fields`)."""
    endpoint_id = check_id(endpoint_id) if endpoint_id is not None else "ep_" + new_id()[:16]
    if "url" not in fields:
        raise ConfigurationError(f"Webhook {webhook!r} endpoint {endpoint_id!r}: a url is required.")
    checked = check_fields(webhook, endpoint_id, {"events": ["**"], **fields}, declared=declared)
    now = now_ms()
    return {"id": endpoint_id, "webhook": webhook, "url": checked["url"], "events": checked["events"],
            "enabled": True, "disabledReason": None, "disabledAt": None, "secretIds": checked.get("secretIds"),
            "headers": checked.get("headers", {}), "secretHeaders": checked.get("secretHeaders", {}),
            "rateLimit": checked.get("rateLimit"),
            "allowPrivate": checked.get("allowPrivate", False), "description": checked.get("description", ""),
            "createdAt": now, "updatedAt": now, "version": 1}


def load_all(durable: DurablePlane, webhook: str) -> list[Endpoint]:
    """Every endpoint of ``webhook``, by id."""
    found, cursor = [], None
    while True:
        page = durable.list(webhook_endpoints_namespace(webhook), limit=1000, cursor=cursor)
        found += [Endpoint.from_value(r.value) for r in page.records]
        if page.next_cursor is None:
            return sorted(found, key=lambda e: e.id)
        cursor = page.next_cursor


def load(durable: DurablePlane, webhook: str, endpoint_id: str) -> Endpoint | None:
    record = durable.get(webhook_endpoints_namespace(webhook), endpoint_id)
    return None if record is None else Endpoint.from_value(record.value)


def change(durable: DurablePlane, webhook: str, endpoint_id: str, changes: Mapping[str, Any]) -> Endpoint:
    """Apply record-key ``changes`` to the endpoint (checked by the caller), bumping its
    version; retried on a concurrent change. JobNotFound when it does not exist."""
    namespace = webhook_endpoints_namespace(webhook)
    for _ in range(20):
        record = durable.get(namespace, endpoint_id)
        if record is None:
            raise JobNotFound(f"Webhook {webhook!r} has no endpoint {endpoint_id!r}.")
        value = {**record.value, **changes, "updatedAt": now_ms(), "version": record.value.get("version", 1) + 1}
        if durable.compare_and_set(namespace, endpoint_id, expect={"version": record.value.get("version", 1)},
                                   value=value):
            return Endpoint.from_value(value)
    raise InvalidState(f"Webhook {webhook!r} endpoint {endpoint_id!r} kept changing under us; try again.")


def move_declared_secrets(durable: DurablePlane, webhook: str, declared: Mapping[str, Any],
                          secrets: Mapping[str, str]) -> bool:
    """Take the credential values an older version stored in a declared endpoint's
    record out of it, where the declaration holds the same value; whether it moved any."""
    namespace = webhook_endpoints_namespace(webhook)
    for _ in range(20):
        record = durable.get(namespace, declared["id"])
        changes = None if record is None else moved_out(record.value, declared, secrets)
        if record is None or changes is None:
            return False
        version = record.value.get("version", 1)
        value = {**record.value, **changes, "updatedAt": now_ms(), "version": version + 1}
        if durable.compare_and_set(namespace, declared["id"], expect={"version": version}, value=value):
            return True
    raise InvalidState(f"Webhook {webhook!r} endpoint {declared['id']!r} kept changing under us; try again.")


def disabled_changes(reason: str) -> dict[str, Any]:
    return {"enabled": False, "disabledReason": _description(reason, "the reason")[:MAX_REASON_LENGTH] or "disabled",
            "disabledAt": now_ms()}


ENABLED_CHANGES: Mapping[str, Any] = {"enabled": True, "disabledReason": None, "disabledAt": None}


def _url(value: Any, what: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_URL_LENGTH or text_problem(value) is not None \
            or any(c.isspace() for c in value):
        raise ConfigurationError(f"{what}: the url must be 1-{MAX_URL_LENGTH} characters without spaces or "
                                 f"control characters, got {value!r}.")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise ConfigurationError(f"{what}: the url {value!r} cannot be parsed: {exc}.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"{what}: the url must be http:// or https:// with a host, got {value!r}.")
    if parts.username is not None or parts.password is not None:
        raise ConfigurationError(f"{what}: the url must not hold credentials (records keep no secrets); "
                                 "the receiver checks the signature instead.")
    if parts.fragment:
        raise ConfigurationError(f"{what}: the url must not have a #fragment, got {value!r}.")
    del port  # parsed only to refuse a bad one
    return value


def _secret_ids(value: Any, what: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence) or not value or not all(
            isinstance(v, str) and ENDPOINT_ID.match(v) for v in value):
        raise ConfigurationError(f"{what}: secret_ids must be None (every secret of the webhook) or a non-empty "
                                 f"list of secret ids, got {value!r}.")
    return list(dict.fromkeys(value))


def _headers(value: Any, what: str, endpoint_id: str, declared: dict[str, str] | None
             ) -> tuple[dict[str, str], dict[str, str]]:
    """The record's ``headers`` (a secret one's value masked) and ``secretHeaders`` (a
    secret one's name -> the id of the header secret that holds its value)."""
    if value is None:
        return {}, {}
    if not isinstance(value, Mapping) or len(value) > MAX_HEADERS:
        raise ConfigurationError(f"{what}: headers must be a mapping of at most {MAX_HEADERS} names to values.")
    headers: dict[str, str] = {}
    refs: dict[str, str] = {}
    for name, text in value.items():
        if not isinstance(name, str) or not HEADER_NAME.match(name):
            raise ConfigurationError(f"{what}: header name {name!r} is not a valid HTTP header name.")
        lowered = name.lower()
        if lowered in FORBIDDEN_HEADERS or lowered.startswith("webhook-"):
            raise ConfigurationError(f"{what}: the header {name!r} is set by the sender (or is meant for a proxy, "
                                     "and none is used); it cannot be configured.")
        if isinstance(text, HeaderSecret):
            refs[lowered] = _secret_ref(text, name, what, declared)
        elif is_credential(lowered):
            if declared is None:
                raise ConfigurationError(
                    f"{what}: the header {name!r} looks like a credential: no record keeps its value, and a value "
                    "given at run time would reach no other process. Declare the webhook with header_secrets="
                    "{'<id>': value} in every process that delivers and pass HeaderSecret('<id>') as its value "
                    "(or declare the endpoint in code).")
            secret_id = declared_id(endpoint_id, lowered)
            declared[secret_id] = check_value(text, f"{what}: the value of header {name!r}")
            refs[lowered] = secret_id
        else:
            if not isinstance(text, str) or len(text) > 1000 or any(ord(c) < 32 or ord(c) == 127 for c in text) \
                    or text_problem(text) is not None:
                raise ConfigurationError(f"{what}: header {name!r} must be a HeaderSecret or a string of at most "
                                         "1000 characters without control characters.")
            headers[lowered] = text
            refs.pop(lowered, None)
            continue
        headers[lowered] = MASK
    return headers, refs


def _secret_ref(ref: HeaderSecret, name: str, what: str, declared: dict[str, str] | None) -> str:
    if not isinstance(ref.id, str) or not ENDPOINT_ID.match(ref.id):
        raise ConfigurationError(f"{what}: header {name!r}: a header secret id is 1-64 letters, digits, '_', '.' "
                                 f"or '-', got {ref.id!r}.")
    # A declaration names the secrets it holds: an unknown id there is a typo. At run
    # time the delivering workers resolve it (this process need not hold the value).
    if declared is not None and ref.id not in declared:
        raise ConfigurationError(f"{what}: header {name!r} takes header secret {ref.id!r}, which the webhook "
                                 "does not declare: add it to header_secrets.")
    return ref.id


def _rate_limit(value: Any, what: str) -> RateLimitValue | None:
    if value is None:
        return None
    count, seconds = (value.get("count"), value.get("seconds")) if isinstance(value, Mapping) else (
        value if isinstance(value, (tuple, list)) and len(value) == 2 else (None, None))
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 100_000 \
            or not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not math.isfinite(seconds) \
            or not 0 < seconds <= 86_400:
        raise ConfigurationError(f"{what}: rate_limit must be (count, seconds): 1-100,000 deliveries per "
                                 f"0-86,400 seconds, got {value!r}.")
    return {"count": count, "seconds": float(seconds)}


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(f"{what}: allow_private must be True or False, got {value!r}.")
    return value


def _description(value: Any, what: str) -> str:
    if not isinstance(value, str) or len(value) > MAX_REASON_LENGTH or text_problem(value) is not None:
        raise ConfigurationError(f"{what}: text must be a string of at most {MAX_REASON_LENGTH} characters "
                                 "without NUL characters or lone surrogates.")
    return value

"""Issue 36's targets, read from one ``throughput.py`` run's medians (PASS, FAIL or n/a).

The final peer run is one command (bench/README.md, "Issue 36's run")::

    .venv/bin/python bench/throughput.py --repeat 3 --against 3ef4fdc \
        --systems oqron-redis-postgres,oqron-redis,oqron-postgres,procrastinate,rq,celery,dramatiq,huey
"""

from __future__ import annotations

from typing import Any

Row = tuple[str, str, str]


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}x"


def _n(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _get(med: dict[str, dict[str, Any]], name: str, key: str) -> float | None:
    row = med.get(name)
    return None if row is None else row.get(key)


def issue36_targets(med: dict[str, dict[str, Any]], fastest_redis_peer: str | None) -> list[Row]:
    out: list[Row] = []

    def at_least(label: str, ours: str, theirs: str | None, key: str, factor: float) -> None:
        r = _ratio(_get(med, ours, key), _get(med, theirs, key) if theirs else None)
        out.append((label, _x(r) + (f" (vs {theirs})" if theirs else ""), _verdict(None if r is None else r >= factor)))

    at_least("redis-postgres processing >= 3x the fastest Redis peer", "oqron-redis-postgres", fastest_redis_peer,
             "process", 3.0)
    at_least("postgres processing >= 15x Procrastinate", "oqron-postgres", "procrastinate", "process", 15.0)
    at_least("redis processing >= 2x Huey", "oqron-redis", "huey", "process", 2.0)
    huey_p50 = _get(med, "huey", "lat_p50")
    for name in ("oqron-redis-postgres", "oqron-redis"):
        p50 = _get(med, name, "lat_p50")
        ok = None if p50 is None or huey_p50 is None else p50 <= huey_p50
        out.append((f"{name} latency p50 <= Huey's", f"{_n(p50)} vs {_n(huey_p50)} ms", _verdict(ok)))
    p50 = _get(med, "oqron-postgres", "lat_p50")
    out.append(("postgres latency p50 <= 2 ms", "-" if p50 is None else f"{p50:.1f} ms",
                _verdict(None if p50 is None else p50 <= 2.0)))
    for name in ("oqron-redis-postgres", "oqron-redis", "oqron-postgres"):
        p99 = _get(med, name, "lat_p99")
        out.append((f"{name} latency p99 <= 5 ms", "-" if p99 is None else f"{p99:.1f} ms",
                    _verdict(None if p99 is None else p99 <= 5.0)))
    r = _ratio(_get(med, "oqron-redis", "single"), _get(med, "huey", "single"))
    out.append(("redis single add within 1.2x of Huey's enqueue (rate ratio >= 1/1.2)", _x(r),
                _verdict(None if r is None else r >= 1 / 1.2)))
    rq = med.get("rq")
    at_least("redis-postgres add_bulk >= 3x RQ enqueue_many", "oqron-redis-postgres",
             "rq" if rq and not rq.get("bulk_is_single") else None, "bulk", 3.0)
    huey_rss = _get(med, "huey", "rss_mib")
    for name in ("oqron-redis-postgres", "oqron-redis", "oqron-postgres"):
        rss = _get(med, name, "rss_mib")
        ok = None if rss is None or huey_rss is None else rss <= huey_rss
        out.append((f"{name} worker peak RSS <= Huey's", f"{_n(rss, 0)} vs {_n(huey_rss, 0)} MiB", _verdict(ok)))
    for name in ("oqron-postgres", "oqron-redis-postgres"):  # --against: the plain path at most its old cost
        r = _ratio(_get(med, name, "cpu_us"), _get(med, name + "~base", "cpu_us"))
        out.append((f"{name} worker CPU per job <= --against's (plain path)", _x(r),
                    _verdict(None if r is None else r <= 1.0)))
    return out

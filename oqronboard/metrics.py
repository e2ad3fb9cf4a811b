"""The board's Prometheus gauges, computed at scrape time from the durable tables and the
hot plane of one scope (the configured project/environment).

Every figure comes from a query the board's pages already make (overview, schedules,
topics, webhooks), so the scrape costs what those panels cost, bounded whatever the
size of the run history (no query here reads ``oqron_runs``):

1. the queue control records, each with its oldest waiting job (an index probe);
2. the dead-letter depth per queue (the spec's dashboard query);
3. the queues holding jobs (a skip scan of the primary key);
4. the crons and schedules with their control records (one primary-key prefix read);
5. the topic records (one primary-key range) and 6. the groups' delivery queue sizes;
7. the webhook records (one primary-key range);

plus the hot plane's depths, the worker registry and the leader lock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

from django.db import DatabaseError
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from oqronboard.definitions import schedules
from oqronboard.definitions.topics import group_lag, topic_records
from oqronboard.jobs.queries import dlq_depths, job_queues, queue_sizes
from oqronkit import OqronError
from oqronkit.clock import now_ms
from oqronkit.live import live_workers
from oqronkit.services.kept_depths import read_depths
from oqronkit.services.leader import LEADER_LOCK
from oqronkit.topics.subscription import delivery_queue_name

from . import overview, webhooks
from .base.scope import BoardScope
from .base.shared import kept_depths_ms

logger = logging.getLogger(__name__)
# A token shorter than this never authenticates (a guessable secret is no secret).

HOT_STATES = ("waiting", "delayed", "active")
BREAKER_STATES = ("closed", "open", "half-open")


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=labels)


class BoardCollector(Collector):
    """One scrape of one scope. A plane or section that fails is reported by
    ``oqron_up`` / ``oqron_scrape_section_ok`` as 0 and its gauges left out: a scrape
    never fails as a whole for one plane."""

    def __init__(self, scope: BoardScope) -> None:
        self.scope = scope

    def collect(self) -> Iterator[Metric]:
        started, now = time.perf_counter(), now_ms()
        sections = _gauge("oqron_scrape_section_ok", "1 when the section's figures were read, 0 when it failed.",
                          ["section"])
        spent = _gauge("oqron_scrape_section_seconds", "Time each section of this scrape took.", ["section"])
        up = {"durable": 1, "hot": 1}
        for section, collect in (("queues", self._queues), ("workers", self._workers),
                                 ("schedules", self._schedules), ("topics", self._topics),
                                 ("webhooks", self._webhooks), ("database", self._database)):
            began = time.perf_counter()
            try:
                yield from collect(now)
            except (OqronError, DatabaseError) as exc:
                up["durable" if isinstance(exc, DatabaseError) else "hot"] = 0  # the ORM's, or the hot plane's
                logger.warning("metrics: the %s figures could not be read: %s", section, exc,
                               extra={"action": "board.metrics_failed"})
                sections.add_metric([section], 0)
            else:
                sections.add_metric([section], 1)
            spent.add_metric([section], time.perf_counter() - began)
        yield sections
        yield spent
        planes = _gauge("oqron_up", "1 when the plane answered the scrape's reads.", ["plane"])
        for plane, value in up.items():
            planes.add_metric([plane], value)
        yield planes
        yield GaugeMetricFamily("oqron_scrape_duration_seconds", "Time this scrape took to compute.",
                                value=time.perf_counter() - started)

    def _queues(self, now: int) -> Iterator[Metric]:
        scope = self.scope
        states, dead, holding = overview.queue_states(scope), dlq_depths(scope), job_queues(scope)
        names = sorted(set(states) | set(dead) | set(holding))
        dead_family = _gauge("oqron_queue_dead_letters", "Dead letters per queue.", ["queue"])
        oldest = _gauge("oqron_queue_oldest_waiting_age_seconds",
                        "Age of the queue's oldest waiting job (0 when none waits).", ["queue"])
        paused = _gauge("oqron_queue_paused", "1 when the queue is paused cluster-wide.", ["queue"])
        for name in names:
            state = states.get(name, {})
            dead_family.add_metric([name], dead.get(name, 0))
            oldest_at = state.get("oldest")
            oldest.add_metric([name], max(now - oldest_at, 0) / 1000 if oldest_at is not None else 0)
            paused.add_metric([name], 1 if state.get("control", {}).get("paused") else 0)
        yield dead_family
        yield oldest
        yield paused
        # The hot plane last: a Redis outage still leaves the durable figures above. The depths a
        # board has the leader keep counted when they are fresh, else counted now (a scrape every
        # 15 s asking the leader to count every second would cost more than counting itself).
        depths = read_depths(scope.engine.hot, names, now=now, max_age_ms=kept_depths_ms(), ask=False).depths
        jobs = _gauge("oqron_queue_jobs", "Jobs per queue and state (hot plane: waiting, delayed, active).",
                      ["queue", "state"])
        for name in names:
            depth = depths.get(name)
            if depth is not None:
                for label, value in zip(HOT_STATES, (depth.ready, depth.delayed, depth.active), strict=True):
                    jobs.add_metric([name, label], value)
        yield jobs

    def _workers(self, now: int) -> Iterator[Metric]:
        hot = self.scope.engine.hot
        workers = live_workers(hot, now=now)
        consumers: dict[str, int] = {}
        for worker in workers:
            for name in worker.get("queues") or {}:
                consumers[name] = consumers.get(name, 0) + 1
        yield GaugeMetricFamily("oqron_workers", "Live workers (heartbeat not lapsed).", value=len(workers))
        per_queue = _gauge("oqron_queue_workers", "Live workers consuming the queue.", ["queue"])
        for name, count in sorted(consumers.items()):
            per_queue.add_metric([name], count)
        yield per_queue
        yield GaugeMetricFamily("oqron_leader_present", "1 when a worker holds the leader lock.",
                                value=1 if hot.lock_owner(LEADER_LOCK, now) else 0)

    def _schedules(self, now: int) -> Iterator[Metric]:
        rows, _ = schedules.schedule_rows(self.scope, describe=False)
        lag = _gauge("oqron_schedule_lag_seconds",
                     "How late the next fire is (now minus its due time; 0 when not yet due, paused or done).",
                     ["kind", "name"])
        paused = _gauge("oqron_schedule_paused", "1 when the cron or schedule is paused.", ["kind", "name"])
        for row in rows:
            due = row["next_run_at"]
            late = (now - due) / 1000 if isinstance(due, int | float) and not row["paused"] and not row["done"] else 0
            lag.add_metric([row["kind"], row["name"]], max(late, 0))
            paused.add_metric([row["kind"], row["name"]], 1 if row["paused"] else 0)
        yield lag
        yield paused

    def _topics(self, now: int) -> Iterator[Metric]:
        found, _ = topic_records(self.scope)
        groups = [(topic.name, name, value, topic.nexts()) for topic in found.values()
                  for name, value in sorted(topic.groups.items())]
        sizes = queue_sizes(self.scope, [delivery_queue_name(topic, group) for topic, group, _, _ in groups])
        lag = _gauge("oqron_topic_group_lag_messages", "Messages published but not yet handed to the group.",
                     ["topic", "group"])
        dead = _gauge("oqron_topic_group_dead_letters", "Dead deliveries of the consumer group.", ["topic", "group"])
        paused = _gauge("oqron_topic_group_paused", "1 when the consumer group is paused.", ["topic", "group"])
        for topic, group, value, nexts in groups:
            lag.add_metric([topic, group], sum(group_lag(value, nexts).values()))
            dead.add_metric([topic, group], sizes.get(delivery_queue_name(topic, group), (0, 0))[1])
            paused.add_metric([topic, group], 1 if value.get("paused") else 0)
        yield lag
        yield dead
        yield paused

    def _database(self, now: int) -> Iterator[Metric]:
        """PostgreSQL only (Engine.database_health): the transaction holding the horizon,
        each engine table's dead rows and last vacuum."""
        health = self.scope.engine.database_health()
        if health is None:
            return
        holder = health.holder
        age = _gauge("oqron_db_oldest_transaction_age_seconds",
                     "Age of the oldest transaction holding the xmin horizon (0 when none is open).",
                     ["application_name", "client_addr"])
        age.add_metric([holder.application_name, holder.client_addr or ""] if holder else ["", ""],
                       holder.age_s if holder else 0)
        yield age
        yield GaugeMetricFamily("oqron_db_horizon_warning",
                                "1 when that transaction is older than OQRON horizon_warning_s.",
                                value=1 if health.horizon_warning else 0)
        dead = _gauge("oqron_db_table_dead_rows", "Dead rows of the engine's table (pg_stat_user_tables).", ["table"])
        live = _gauge("oqron_db_table_live_rows", "Live rows of the engine's table.", ["table"])
        vacuumed = _gauge("oqron_db_table_last_vacuum_timestamp_seconds",
                          "When the table was last vacuumed (VACUUM or autovacuum); absent when never.", ["table"])
        bloated = _gauge("oqron_db_table_bloat_warning",
                         "1 when dead rows are over 10,000 and outnumber the live ones.", ["table"])
        for table in health.tables:
            dead.add_metric([table.name], table.dead_rows)
            live.add_metric([table.name], table.live_rows)
            bloated.add_metric([table.name], 1 if table.bloated else 0)
            if table.last_vacuum_ms is not None:
                vacuumed.add_metric([table.name], table.last_vacuum_ms / 1000)
        yield from (dead, live, vacuumed, bloated)

    def _webhooks(self, now: int) -> Iterator[Metric]:
        data = webhooks.build(self.scope, stats=False)
        breaker = _gauge("oqron_webhook_breaker_state", "1 for the endpoint breaker's current state.",
                         ["webhook", "endpoint", "state"])
        enabled = _gauge("oqron_webhook_endpoint_enabled", "1 when the endpoint is enabled.", ["webhook", "endpoint"])
        for row in data.webhooks:
            for endpoint in row.endpoints:
                for state in BREAKER_STATES:
                    breaker.add_metric([row.name, endpoint.id, state], 1 if endpoint.breaker == state else 0)
                enabled.add_metric([row.name, endpoint.id], 1 if endpoint.enabled else 0)
        yield breaker
        yield enabled

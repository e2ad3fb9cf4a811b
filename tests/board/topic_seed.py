"""Topics for the board's tests, written the way the engine writes them: messages
through :class:`oqronkit.Topic`'s publish, groups through ``oqronkit.topics.groups``,
and each delivery's job, dead letter and runs in the shapes the dispatcher and a
worker store (``oqronkit.topics.dispatch``, ``oqronkit.queues.runs``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oqronkit import Job, Topic
from oqronkit.clock import now_ms
from oqronkit.queues.runs import finish_run, new_run
from oqronkit.topics import groups
from oqronkit.topics.subscription import delivery_queue_name
from tests.board.seed import Board, error, put_jobs, put_runs

HOSTILE = "<script>alert(1)</script>"
KEYS = ("alice", "bob", "carol")  # partitions 1, 0, 1 of two (crc32)


@dataclass
class SeededTopic:
    name: str
    ids: list[str]  # message ids, in publishing order
    messages: dict[str, dict[str, Any]]  # id -> stored value


def publish(board: Board, name: str = "orders", *, partitions: int = 2, count: int = 12,
            hostile: bool = False) -> SeededTopic:
    """``count`` messages through the engine (keys alice, bob, carol, correlation ids corr-0/1,
    a header each); with ``hostile`` the last one's key, header and payload are markup."""
    topic = Topic(name, partitions=partitions, engine=board.scope.engine)
    items: list[dict[str, Any]] = [
        {"payload": {"n": n, "item": f"sku-{n}"}, "key": KEYS[n % 3], "headers": {"source": f"shop-{n}"},
         "correlation_id": f"corr-{n % 2}"} for n in range(count)]
    if hostile:
        items[-1] = {"payload": {"note": HOSTILE}, "key": HOSTILE, "headers": {HOSTILE: HOSTILE},
                     "correlation_id": "corr-x"}
    ids = topic.publish_many(items)
    plane = board.plane
    values = {r.id: r.value for r in plane.get_many(f"topic_msg:{name}", ids)}
    return SeededTopic(name, ids, values)


def group(board: Board, topic: SeededTopic, name: str, *, handed: int = 0, partitions: int = 2,
          paused: bool = False) -> dict[str, Any]:
    """Create group ``name`` at the earliest message and hand it the first ``handed``
    messages (its cursor moved past them, as the dispatcher would)."""
    value = groups.ensure(board.plane, topic.name, name, partitions, "earliest")
    cursor = dict(value["cursor"])
    for message_id in topic.ids[:handed]:
        message = topic.messages[message_id]
        key = str(message["partition"])
        cursor[key] = max(cursor[key], message["offset"])
    return dict(groups.update(board.plane, topic.name, name, partitions, cursor=cursor, paused=paused))


def delivery_data(message: dict[str, Any]) -> dict[str, Any]:
    return {k: message.get(v) for k, v in (
        ("topic", "topic"), ("messageId", "id"), ("partition", "partition"), ("offset", "offset"), ("key", "key"),
        ("payload", "payload"), ("headers", "headers"), ("publishedAt", "publishedAt"),
        ("correlationId", "correlationId"))}


def in_flight(board: Board, topic: SeededTopic, group_name: str, message_id: str) -> None:
    queue = delivery_queue_name(topic.name, group_name)
    at = now_ms()
    put_jobs(board.plane, [Job(id=message_id, queue=queue, data=delivery_data(topic.messages[message_id]),
                               status="waiting", created_at=at, updated_at=at, max_attempts=3)])


def dead(board: Board, topic: SeededTopic, group_name: str, message_id: str, message: str = "downstream is down",
         *, died: int | None = None) -> None:
    queue = delivery_queue_name(topic.name, group_name)
    at = now_ms()
    job = Job(id=message_id, queue=queue, data=delivery_data(topic.messages[message_id]), status="active",
              created_at=at, updated_at=at, attempts=3, max_attempts=3)
    job.record_error({**error(message, "RuntimeError"), "attempt": 3})
    job.die("failed on attempt 3 of 3", died if died is not None else at)
    put_jobs(board.plane, [job])


def delivery_run(board: Board, topic: SeededTopic, group_name: str, message_id: str, *, status: str = "completed",
                 attempt: int = 1, message: str = "downstream is down") -> str:
    """A run of one delivery attempt, as a worker records it."""
    run = new_run(name=delivery_queue_name(topic.name, group_name), module="topic", trigger="topic",
                  input=delivery_data(topic.messages[message_id]), attempts=attempt, app="test",
                  environment="test", worker_id="worker-1", job_id=message_id, started_at=now_ms() - 5000 + attempt,
                  extra={"topic": topic.name, "group": group_name, "messageId": message_id})
    finish_run(run, status, error=error(message, "RuntimeError") if status == "failed" else None,
               output={"ok": True} if status == "completed" else None)
    put_runs(board.plane, [dict(run)])
    return run["id"]

"""The links of the topics panel (the topics page and a topic log's header), each route
reversed once a request and filled per topic and group (:class:`SegmentPattern`) rather
than eight ``{% url %}`` a group: a page of 60 groups spent a third of its time
reversing (tests/board/test_topic_links.py holds every one equal to ``reverse()``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

from django.urls import reverse

from .base.urlsafe import SegmentPattern
from .topics import TopicRow


@dataclass(frozen=True)
class GroupLinks:
    """A consumer group's page, its actions, its delivery queue and its dead letters."""

    page: str
    pause: str
    resume: str
    replay: str
    retry_dead: str
    queue: str
    dead: str


@dataclass(frozen=True)
class TopicLinks:
    log: str
    groups: dict[str, GroupLinks]


def topic_links(topics: Iterable[TopicRow], *, back: str) -> dict[str, TopicLinks]:
    """Each topic's links by name, its groups' by group name; a replay comes back to ``back``."""
    log, page, queue = SegmentPattern("oqronboard:topic-log"), SegmentPattern("oqronboard:topic-group", 2), \
        SegmentPattern("oqronboard:queue-jobs")
    pause, resume = SegmentPattern("oqronboard:group-pause", 2), SegmentPattern("oqronboard:group-resume", 2)
    replay, retry = SegmentPattern("oqronboard:group-replay", 2), SegmentPattern("oqronboard:group-retry-dead", 2)
    dead_url, back_query = reverse("oqronboard:dead-letters"), f"?next={quote(back, safe='/')}"
    links = {}
    for topic in topics:
        groups = {}
        for group in topic.groups:
            names = (topic.name, group.name)
            # Query values quoted as the urlencode template filter quotes them.
            groups[group.name] = GroupLinks(
                page=page.fill(*names), pause=pause.fill(*names), resume=resume.fill(*names),
                replay=replay.fill(*names) + back_query, retry_dead=retry.fill(*names),
                queue=queue.fill(group.queue), dead=f"{dead_url}?queue={quote(group.queue, safe='/')}")
        links[topic.name] = TopicLinks(log=log.fill(topic.name), groups=groups)
    return links

"""The links of the topics panel (the topics page and a topic log's header), built once
a request from three reversed prefixes rather than eight ``{% url %}`` a group: a page
of 60 groups spent a third of its time reversing. A topic's page and its groups' pages
are :func:`~oqronboard.base.urlsafe.encode_segment` segments below the topics page, a
group's actions paths below its page, its delivery queue a segment below the queues page
(the routes in :mod:`oqronboard.routes`; tests/board/test_topic_links.py holds every one
equal to ``reverse()``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

from django.urls import reverse

from .base.urlsafe import encode_segment
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
    topics_url, queues_url = reverse("oqronboard:topics"), reverse("oqronboard:queues")
    dead_url = reverse("oqronboard:dead-letters")
    links = {}
    for topic in topics:
        log = f"{topics_url}{encode_segment(topic.name)}/"
        groups = {}
        for group in topic.groups:
            page = f"{log}groups/{encode_segment(group.name)}/"
            # Query values quoted as the urlencode template filter quotes them.
            groups[group.name] = GroupLinks(
                page=page, pause=page + "pause/", resume=page + "resume/",
                replay=f"{page}replay/?next={quote(back, safe='/')}",
                retry_dead=page + "retry-dead/", queue=f"{queues_url}{encode_segment(group.queue)}/",
                dead=f"{dead_url}?queue={quote(group.queue, safe='/')}")
        links[topic.name] = TopicLinks(log=log, groups=groups)
    return links

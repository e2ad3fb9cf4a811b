"""A topic's panel built in Python (oqronboard/topic_section.py) is the markup the
``_topic.html`` template drew: every kind of topic (paused, undefined, with and without
groups, a partial last hour, a retention), hostile names escaped, numbers grouped as the
host asks, an operator's actions only for an operator."""

from __future__ import annotations

import re

import pytest
from django.template import Context, Template
from django.test import RequestFactory

from oqronboard.topic_links import topic_links
from oqronboard.topic_rows import group_rows
from oqronboard.topic_section import topic_section
from oqronboard.topics import GroupRow, PartitionRow, TopicRow
from oqronkit.clock import now_ms

HOSTILE = "<img src=x onerror=alert(1)>&\"'"

# _topic.html as it was before topic_section.py; its group rows were already topic_rows.py's.
OLD_TOPIC_TEMPLATE = """{% load board board_rows %}{% with links=topic_links|get_item:t.name %}
<section class="panel topic" data-testid="topic-{{ t.name }}">
  <h2><a href="{{ links.log }}" data-open data-testid="topic-link-{{ t.name }}">{{ t.name }}</a>
    {% if t.paused %}<span class="badge warn">paused</span>{% endif %}
    {% if not t.defined %}<span class="badge warn"
      title="No definition record: groups or counters without their topic">no definition</span>{% endif %}</h2>
  <dl class="facts inline-facts">
    <dt>Partitions</dt><dd class="num" data-testid="partitions-{{ t.name }}">{{ t.partitions }}</dd>
    <dt>Retained</dt><dd class="num" data-testid="retained-{{ t.name }}">{{ t.retained }}</dd>
    <dt>Published</dt><dd class="num" title="every message ever published (the partitions' next offsets)">
      {{ t.published }}</dd>
    <dt>Oldest</dt><dd>{% if t.oldest_published %}<time datetime="{{ t.oldest_published|ms_iso }}"
      title="{{ t.oldest_published|ms_time }}">{{ t.oldest_published|ago }}</time>
      {% else %}<span class="muted">none</span>{% endif %}</dd>
    <dt>Newest</dt><dd>{% if t.newest_published %}<time datetime="{{ t.newest_published|ms_iso }}"
      title="{{ t.newest_published|ms_time }}">{{ t.newest_published|ago }}</time>
      {% else %}<span class="muted">none</span>{% endif %}</dd>
    <dt>Last hour</dt><dd class="num"><span data-testid="rate-{{ t.name }}"{% if t.last_hour_partial %}
      title="at least {{ t.last_hour }}: a partition's first message of the hour was not among those read"{% endif %}>
      {{ t.last_hour }}{% if t.last_hour_partial %}+{% endif %}</span>
      <span class="muted small">({{ t.per_minute|floatformat:1 }}/min)</span></dd>
    {% if t.definition.retentionMs %}<dt>Retention</dt><dd>{{ t.definition.retentionMs|duration }}
      {% if t.definition.retentionCount %} or {{ t.definition.retentionCount }} per partition{% endif %}</dd>
    {% endif %}
  </dl>
  {% if t.groups %}
  <div class="table-wrap">
  <table class="data compact" data-testid="groups-{{ t.name }}">
    <thead><tr><th scope="col">Group</th><th scope="col" class="num">Lag</th><th scope="col" class="num">In flight</th>
      <th scope="col" class="num">Dead</th><th scope="col" class="opt">Started from</th>
      {% if is_operator %}<th scope="col">Actions</th>{% endif %}</tr></thead>
    <tbody>
    {{ rows }}
    </tbody>
  </table>
  </div>
  {% else %}<p class="muted small">No consumer group yet: a worker that subscribes one creates it.</p>{% endif %}
</section>{% endwith %}"""


def group(topic: str, name: str, *, paused: bool = False, dead: int = 0) -> GroupRow:
    return GroupRow(topic=topic, name=name, paused=paused, lag=12345, lag_partitions={0: 12000, 1: 345}, cursor={},
                    start_from="earliest", updated_at=None, in_flight=7, dead=dead)


def every_kind_of_topic() -> list[TopicRow]:
    now = now_ms()
    partitions = [PartitionRow(partition=0, next=1_234_567, oldest=10, oldest_published=now - 90_000_000,
                               newest_published=now - 4_000),
                  PartitionRow(partition=1, next=20, oldest=None, oldest_published=None, newest_published=None)]
    return [
        TopicRow(name=HOSTILE, partitions=2, defined=True, definition={"retentionMs": 86_400_000,
                                                                       "retentionCount": 50_000},
                 paused=True, partition_rows=partitions, groups=[group(HOSTILE, HOSTILE, dead=3),
                                                                 group(HOSTILE, "held", paused=True)],
                 last_hour=4321, last_hour_partial=True, now=now),
        TopicRow(name="orders", partitions=1, defined=False, definition={}, paused=False, partition_rows=[],
                 last_hour=0, now=now),
        TopicRow(name="audit", partitions=1, defined=True, definition={"retentionMs": 1500,
                                                                       "retentionCount": f"<{HOSTILE}>"},
                 paused=False, partition_rows=partitions[:1], groups=[group("audit", "billing")], last_hour=61,
                 now=now),
    ]


def _squash(markup: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r">\s+", ">", re.sub(r"\s+<", "<", markup))).replace("&#39;", "&#x27;").strip()


@pytest.mark.parametrize("operator", [False, True])
@pytest.mark.parametrize("grouping", [False, True])
def test_the_topic_panel_is_the_markup_the_template_drew(settings, grouping: bool, operator: bool):
    from oqronboard.templatetags import board_rows

    settings.USE_THOUSAND_SEPARATOR = grouping
    topics = every_kind_of_topic()
    links = topic_links(topics, back="/topics/")
    rendered_at = now_ms()
    context = {"topic_links": links, "is_operator": operator, "rendered_at": rendered_at, "action_cap": 1000,
               "csrf_token": "tok<en>", "request": RequestFactory().get("/topics/?x=<b>")}
    actions = board_rows._actions(Context(context))
    if operator:
        assert actions is not None and actions.csrf_token == "tok<en>"
    else:
        assert actions is None
    for t in topics:
        # The old template's group rows were already topic_rows.py's (test_topic_rows.py).
        rows = group_rows(t, links[t.name], actions)
        before = Template(OLD_TOPIC_TEMPLATE).render(Context({**context, "t": t, "rows": rows}))
        after = str(topic_section(t, links[t.name], actions))
        assert _squash(after) == _squash(before)
        assert "<img" not in after and "onerror=alert(1)>" not in after
    assert ("1,234,587" in str(topic_section(topics[0], links[HOSTILE], actions))) is grouping

"""Tags that put rows built in Python (already escaped, so marked safe) into a template."""

from __future__ import annotations

from typing import Any

from django import template
from django.template import Context
from django.utils.safestring import SafeString

from ..topic_rows import Actions
from ..topic_rows import group_rows as topic_group_rows
from .board import ms_time

register = template.Library()


@register.simple_tag(takes_context=True)
def group_rows(context: Context, topic: Any, links: Any) -> SafeString:
    """A topic's consumer group rows (:mod:`oqronboard.topic_rows`), with an operator's
    action cells when the page's ``is_operator`` says so."""
    actions = None
    if context.get("is_operator"):
        rendered_at = int(context["rendered_at"])
        actions = Actions(path=context["request"].path, csrf_token=str(context.get("csrf_token", "")),
                          rendered_at=rendered_at, rendered_at_text=ms_time(rendered_at),
                          action_cap=int(context["action_cap"]))
    return topic_group_rows(topic, links, actions)

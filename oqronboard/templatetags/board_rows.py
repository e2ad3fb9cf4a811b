"""Tags that put rows built in Python (already escaped, so marked safe) into a template."""

from __future__ import annotations

from typing import Any

from django import template
from django.template import Context
from django.utils.safestring import SafeString

from ..topic_rows import Actions
from ..topic_section import topic_section as build_topic_section
from .board import ms_time

register = template.Library()


def _actions(context: Context) -> Actions | None:
    """What an operator's action cells need, from the page's context (None for a viewer)."""
    if not context.get("is_operator"):
        return None
    rendered_at = int(context["rendered_at"])
    return Actions(path=context["request"].path, csrf_token=str(context.get("csrf_token", "")),
                   rendered_at=rendered_at, rendered_at_text=ms_time(rendered_at),
                   action_cap=int(context["action_cap"]))


@register.simple_tag(takes_context=True)
def topic_section(context: Context, topic: Any) -> SafeString:
    """A topic's panel (:mod:`oqronboard.topic_section`) with its links from the page's
    ``topic_links``, and its groups' action cells when the page's ``is_operator`` says so."""
    return build_topic_section(topic, context["topic_links"][topic.name], _actions(context))

"""The board's base: what the apps (``runs``, ``jobs``, ``definitions``) and the shell
all stand on. The read-only record base, scope, ORM expressions, cursors, filters,
page helpers, roles and scope grants, API tokens, the audit writer, the request
middleware and live settings.

It imports Django, ``oqronkit`` and ``oqronkit.contrib.django.engine`` only: never an app, never
the shell (tests/board/test_layers.py)."""

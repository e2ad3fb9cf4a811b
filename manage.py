#!/usr/bin/env python
"""Django's command-line utility for OqronBoard."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "oqronboard.settings")
    try:
        from django.core.management import execute_from_command_line
    except ImportError as exc:
        raise ImportError(
            "Couldn't import Django. Run bin/setup (or activate .venv) first."
        ) from exc
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()

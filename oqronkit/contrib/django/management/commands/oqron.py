"""``python manage.py oqron queues|runs|dead|schedules|retry|delete|cancel|promote|pause|resume|purge``.

Thin by design: the engine-side CLI (:mod:`oqronkit.cli`) parses and runs every command
on the engine this project's settings configure; only the board's shared-page cache is
told about an action here, so the board shows it at once.
"""

from __future__ import annotations

import argparse
import logging
from typing import TextIO, cast

from django.core.management.base import BaseCommand

from oqronkit import OqronError
from oqronkit import cli as oqron_cli

from ... import engine

READS = frozenset({"queues", "runs", "dead", "schedules"})


class Command(BaseCommand):
    help = "Inspect and operate the oqronkit queues, dead letters and schedules (human tables, or --json)."
    # The engine's tables need no Django migration state or system check to be read.
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        oqron_cli.add_commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"),
                               connection_options=False)

    def handle(self, *args: object, **options: object) -> None:
        namespace = argparse.Namespace(**options)
        if options.get("verbosity", 1) in (0, 1):
            # The engine's INFO lines would mix with the table on a terminal; -v 2 shows them.
            logging.getLogger("oqronkit").setLevel(logging.WARNING)
            logging.getLogger("psycopg").setLevel(logging.ERROR)  # a down server: our one error line says it
        # Our writes end their own lines: Django's OutputWrapper would add a second newline.
        console = oqron_cli.Console(stdout=cast(TextIO, self.stdout._out), stderr=cast(TextIO, self.stderr._out))
        try:
            planes = engine.get_engine()
        except OqronError as exc:
            raise SystemExit(oqron_cli.fail(console, namespace, f"bad OQRON configuration: {exc}", 2)) from None
        code = oqron_cli.execute(namespace, planes, console)
        if namespace.command not in READS:
            _refresh_board(namespace, planes.config.project, planes.config.environment)
        if code:
            raise SystemExit(code)


def _refresh_board(namespace: argparse.Namespace, project: str, environment: str) -> None:
    """Tell whoever shows this scope (the board's shared cache) that it changed."""
    from ...signals import scope_changed

    scope_changed.send_robust(sender=Command, project=namespace.project or project,
                              environment=namespace.environment or environment)

"""``python manage.py oqron_demo``: prepare the demo that ``bin/demo`` serves.

- the documented logins, for a local machine only: ``demo`` / ``demo`` (a superuser:
  operator and admin) and ``viewer`` / ``viewer`` (a viewer: sees everything, changes
  nothing; a scope grant of every project and environment, so the switcher offers all);
- the demo workload (``demo/workload.py``): a first burst of jobs on the demo queues
  and a ticker that adds more every few seconds, all through the engine's queue API.
  ``bin/demo`` then runs ``runworker`` (with ``OQRON_DEMO=1``) next to the board;
- a few days of synthetic metrics history for the demo queues (``oqronkit.history.backfill``,
  labelled "synthetic" on every chart), so the history charts show something at once.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

from oqronboard.base.roles import VIEWERS_GROUP
from oqronboard.models import ScopeGrant, ensure_board_groups
from oqronkit import OqronError
from oqronkit.contrib.django import engine
from oqronkit.history.backfill import backfill_synthetic

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo"
VIEWER_USERNAME = "viewer"
VIEWER_PASSWORD = "viewer"
HISTORY_QUEUES = ("emails", "payments", "reports", "thumbnails")
HISTORY_DAYS = 3


class Command(BaseCommand):
    help = "Ensure the demo logins (demo / demo, viewer / viewer) exist and enqueue the demo workload."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--no-workload", action="store_true", help="Only create the demo logins.")

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        ensure_board_groups()
        if users.objects.filter(username=DEMO_USERNAME).exists():
            self.stdout.write(f"Demo login '{DEMO_USERNAME}' already exists.")
        else:
            users.objects.create_superuser(DEMO_USERNAME, "demo@example.com", DEMO_PASSWORD)
            self.stdout.write(self.style.SUCCESS(f"Created the demo login {DEMO_USERNAME} / {DEMO_PASSWORD}."))
        if not users.objects.filter(username=VIEWER_USERNAME).exists():
            viewer = users.objects.create_user(VIEWER_USERNAME, "viewer@example.com", VIEWER_PASSWORD)
            viewer.groups.add(Group.objects.get(name=VIEWERS_GROUP))
            self.stdout.write(self.style.SUCCESS(
                f"Created the viewer login {VIEWER_USERNAME} / {VIEWER_PASSWORD} (sees everything, changes nothing)."))
        # Every scope the demo database holds, as documented; looking only (no can_operate).
        ScopeGrant.objects.get_or_create(user=users.objects.get(username=VIEWER_USERNAME), project="*",
                                         environment="*")
        if not options["no_workload"]:
            self._workload()

    def _workload(self) -> None:
        try:
            config = engine.get_config()
        except OqronError as exc:
            raise CommandError(f"Invalid OQRON configuration: {exc}") from exc
        if config.mode in engine.NON_SQL_MODES:
            self.stdout.write(f"OQRON mode {config.mode!r}: no demo workload (a worker process could not see it).")
            return
        engine.get_engine()  # configure oqronkit's default engine before the demo queues use it
        from demo import workload

        counts = workload.seed()
        summary = ", ".join(f"{n} {queue}" for queue, n in counts.items())
        self.stdout.write(self.style.SUCCESS(f"Enqueued the demo workload ({summary}) and its ticker."))
        # Labelled synthetic on every chart: the history's first real minutes come a minute or two in.
        written = backfill_synthetic(engine.get_engine().durable, HISTORY_QUEUES, days=HISTORY_DAYS)
        self.stdout.write(f"Backfilled {HISTORY_DAYS} days of synthetic metrics history ({written} buckets, "
                          "labelled as synthetic on the charts).")
        sample = engine.get_engine().durable.list("queue_job:checkout", limit=1).records
        if sample and isinstance(sample[0].value.get("correlationId"), str):
            self.stdout.write(f"Follow one checkout on the board: /trace/{sample[0].value['correlationId']}/")

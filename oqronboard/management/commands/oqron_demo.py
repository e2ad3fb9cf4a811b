"""``python manage.py oqron_demo``: prepare the demo that ``bin/demo`` serves.

Today it ensures the documented demo login exists (user ``demo``, password ``demo``,
a superuser, for a local machine only). Later issues add the demo workload here
(queues, crons, topics and the runs they produce), so ``bin/demo`` stays one command.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo"


class Command(BaseCommand):
    help = "Ensure the demo login (demo / demo) exists; later, seed the demo workload."

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        if users.objects.filter(username=DEMO_USERNAME).exists():
            self.stdout.write(f"Demo login '{DEMO_USERNAME}' already exists.")
        else:
            users.objects.create_superuser(DEMO_USERNAME, "demo@example.com", DEMO_PASSWORD)
            self.stdout.write(self.style.SUCCESS(f"Created the demo login {DEMO_USERNAME} / {DEMO_PASSWORD}."))
        # Hook: the demo workload (issue: demo data) is seeded here, through the engine.

"""``python manage.py runworker``: the worker engine and, under leader election, the
scheduler-side services. Thin by design: parse options, build the config, discover
the apps' ``oqron.py`` modules, call the engine's runner."""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.module_loading import autodiscover_modules

from oqronkit import OqronError
from oqronkit.runner import add_worker_arguments, child_argv, import_modules, run_single, supervise
from oqronkit.telemetry.json_logs import use_json_logs

from ... import conf, engine


class Command(BaseCommand):
    help = "Run oqronkit workers for the queues declared in each installed app's oqron.py."

    def add_arguments(self, parser: CommandParser) -> None:
        add_worker_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        logging.getLogger("oqronkit").setLevel(options["log_level"].upper())
        if options["log_format"] == "json":
            use_json_logs()
        if options["processes"] < 1:
            raise CommandError("--processes must be at least 1.")
        if options["processes"] > 1:
            code = supervise([sys.executable, *child_argv(sys.argv)], options["processes"])
            if code:
                raise CommandError(f"a worker process exited with status {code}")
            return
        try:
            config = engine.get_config()
        except OqronError as exc:
            raise CommandError(f"Invalid OQRON configuration: {exc}") from exc
        if config.mode == "memory":
            raise CommandError(
                "OQRON mode 'memory' keeps jobs inside one process, so a separate runworker process "
                "would never see them. Use sqlite (the default), postgres or redis-postgres."
            )
        autodiscover_modules("oqron")
        try:
            import_modules([*conf.imports(), *options["imports"]])
        except OqronError as exc:  # a module named wrongly: a usage error, as argparse's are
            raise CommandError(str(exc), returncode=2) from exc
        try:
            code = run_single(engine.get_engine(), queues=options["queues"], concurrency=options["concurrency"],
                              burst=options["burst"], drain_timeout=options["drain_timeout"],
                              cpu_affinity=options["cpu_affinity"], metrics_port=options["metrics_port"],
                              metrics_addr=options["metrics_addr"], log_format=options["log_format"])
        except OqronError as exc:
            raise CommandError(str(exc)) from exc
        if code:
            raise CommandError(f"the worker stopped with status {code}: see the log above")

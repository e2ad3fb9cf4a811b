"""The reference tables, generated from the code's own tables so the docs cannot drift from it.

Each ``render_*`` function returns Markdown for one ``<!-- reference: NAME -->`` marker of a
reference page (docs/_hooks/reference.py puts it there at build time); ``*_names`` functions
give the names the code has, which tests/docs/test_reference.py compares with the built pages.
Sources: oqronkit/settings_table.py, the argparse parsers of ``python -m oqronkit`` and the
management commands, the board's ``api/v1`` URL patterns, and the metric families.
"""

from __future__ import annotations

import argparse
import ast
import os
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: (app, command): the integration's management commands, and the demo's (installed by OQRON_DEMO=1).
MANAGEMENT_COMMANDS = (("oqronkit.contrib.django", "runworker"), ("oqronkit.contrib.django", "oqron"),
                       ("oqronkit.contrib.django", "oqron_migrate_v1"), ("demo", "oqron_demo"))
#: Calls that declare a metric family: the function's name -> the family's type.
METRIC_CALLS = {"_gauge": "gauge", "GaugeMetricFamily": "gauge", "counter": "counter", "histogram": "histogram"}
METRIC_SOURCES = ("oqronboard/metrics.py", "oqronkit/telemetry/worker_metrics.py")


def cell(text: object) -> str:
    """One table cell: reST's ``double`` backquotes as Markdown's, pipes escaped, one line."""
    return " ".join(str(text).replace("``", "`").replace("|", "\\|").split())


def table(header: tuple[str, ...], rows: Iterator[tuple[str, ...]] | list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# -- settings and environment variables ------------------------------------------------------

def render_oqron_keys() -> str:
    from oqronkit.config import OqronConfig
    from oqronkit.settings_table import OQRON_KEYS

    defaults = {f.name.upper(): f.default for f in fields(OqronConfig)}
    defaults["DATABASE_ALIAS"] = "default"

    def shown(value: object) -> str:
        if value is None:
            return "none"
        return f"`{list(value) if isinstance(value, tuple) else value}`"

    return table(("`OQRON` key", "environment variable", "default", "meaning"), [
        (f"`{key}`", f"`{var}`" if var else "", shown(defaults[key]), meaning)
        for key, (var, meaning) in OQRON_KEYS.items()])


def render_django_settings() -> str:
    from oqronkit.settings_table import DJANGO_SETTINGS

    return table(("setting (and environment variable)", "default", "meaning"), [
        (f"`{e.name}`", e.default, e.meaning) for e in DJANGO_SETTINGS.values()])


def render_django_only_settings() -> str:
    from oqronkit.settings_table import DJANGO_ONLY_SETTINGS

    return table(("setting", "default", "meaning"), [
        (f"`{e.name}`", e.default, e.meaning) for e in DJANGO_ONLY_SETTINGS.values()])


def render_environment() -> str:
    from oqronkit.settings_table import DJANGO_SETTINGS, ENVIRONMENT, OQRON_KEYS

    rows = [(f"`{var}`", f"the `OQRON` key `{key}`: {meaning}") for key, (var, meaning) in OQRON_KEYS.items() if var]
    rows += [(f"`{e.name}`", f"the setting of the same name, when the project leaves it unset: {e.meaning}")
             for e in DJANGO_SETTINGS.values()]
    rows += [(f"`{e.name}`", f"{e.meaning} (default {e.default})") for e in ENVIRONMENT.values()]
    return table(("variable", "meaning"), sorted(rows))


# -- the command line -------------------------------------------------------------------------

def cli_parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """(command line, parser) of every command and subcommand, in reading order."""
    from oqronkit.runner import build_parser

    found: list[tuple[str, argparse.ArgumentParser]] = []
    _walk("python -m oqronkit", build_parser(), found)
    _django()
    from django.core.management import load_command_class

    for app, name in MANAGEMENT_COMMANDS:
        command = load_command_class(app, name)
        _walk(f"python manage.py {name}", command.create_parser("manage.py", name), found)
    return found


def _walk(line: str, parser: argparse.ArgumentParser, found: list[tuple[str, argparse.ArgumentParser]]) -> None:
    found.append((line, parser))
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                _walk(f"{line} {name}", child, found)


#: Django's own options every management command has; Django documents them.
DJANGO_COMMON = frozenset({"--version", "--verbosity", "--settings", "--pythonpath", "--traceback",
                           "--no-color", "--force-color", "--skip-checks", "-v"})


def own_options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions
            if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
            and not set(a.option_strings) & DJANGO_COMMON]


def cli_names() -> set[str]:
    """``command line option`` strings, e.g. ``python -m oqronkit worker --burst``."""
    return {f"{line} {a.option_strings[0] if a.option_strings else a.metavar or a.dest}"
            for line, parser in cli_parsers() for a in own_options(parser)} | {line for line, _ in cli_parsers()}


def render_cli() -> str:
    parts = []
    for line, parser in cli_parsers():
        parts.append(f"### `{line}`\n\n{cell(parser.description or '')}\n")
        rows = []
        for action in own_options(parser):
            name = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.metavar or action.dest}`"
            what = action.help or ""
            if action.choices and not isinstance(action.choices, dict):
                what += ("; " if what else "") + "one of " + ", ".join(f"`{c}`" for c in action.choices)
            default = action.default
            shown = "" if default in (None, False, [], argparse.SUPPRESS) else f"`{default}`"
            rows.append((name, cell(what), shown))
        if rows:
            parts.append(table(("option", "meaning", "default"), rows))
        subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for action in subcommands:
            parts.append("Commands: " + ", ".join(f"`{name}`" for name in action.choices) + ".\n")
    return "\n".join(parts)


# -- the JSON API ------------------------------------------------------------------------------

def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "oqronboard.settings")
    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()


def api_endpoints() -> list[tuple[str, tuple[str, ...], bool, str]]:
    """(path under api/v1/, methods, operator only, what it does) of every endpoint."""
    _django()
    from oqronboard.api.urls import urlpatterns

    found = []
    for pattern in urlpatterns:
        view = pattern.callback
        methods = getattr(view, "api_methods", None)
        if methods is None or pattern.name in ("api-root", "api-not-found"):
            continue
        route = str(pattern.pattern)
        doc = (view.__doc__ or "").strip()
        for key, value in (pattern.default_args or {}).items():  # e.g. pause / resume of one view
            doc = f"{doc} (`{key}={value}`)"
        found.append((route, methods, bool(getattr(view, "api_operator", False)), " ".join(doc.split())))
    return found


def render_json_api() -> str:
    return table(("method", "path", "who", "what"), [
        (", ".join(methods), f"`api/v1/{route}`", "operator" if operator else "viewer", doc)
        for route, methods, operator, doc in api_endpoints()])


# -- metrics -----------------------------------------------------------------------------------

def metric_families() -> list[tuple[str, str, str, str, str]]:
    """(name, type, labels, help, source) of every metric family the code declares."""
    found = []
    for source in METRIC_SOURCES:
        tree = ast.parse((ROOT / source).read_text(encoding="utf-8"))
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call):
                continue
            func = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
            args = call.args
            if func not in METRIC_CALLS or len(args) < 2 or not _is_str(args[0]) or not _is_str(args[1]):
                continue
            labels = next((kw.value for kw in call.keywords if kw.arg == "labels"), args[2] if len(args) > 2 else None)
            label_names = [e.value for e in labels.elts if _is_str(e)] if isinstance(labels, ast.List) else []
            found.append((args[0].value, METRIC_CALLS[func], ", ".join(f"`{n}`" for n in label_names),  # type: ignore[attr-defined]
                          args[1].value, source))  # type: ignore[attr-defined]
    return sorted(found)


def _is_str(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def render_metrics(source: str) -> str:
    def exposed(name: str, kind: str) -> str:
        return f"`{name}_total`" if kind == "counter" else f"`{name}`"

    return table(("metric", "type", "labels", "meaning"), [
        (exposed(name, kind), kind, labels, doc) for name, kind, labels, doc, where in metric_families()
        if where == source])


RENDERERS: dict[str, Callable[[], str]] = {
    "oqron-keys": render_oqron_keys,
    "django-settings": render_django_settings,
    "django-only-settings": render_django_only_settings,
    "environment": render_environment,
    "cli": render_cli,
    "json-api": render_json_api,
    "board-metrics": lambda: render_metrics("oqronboard/metrics.py"),
    "worker-metrics": lambda: render_metrics("oqronkit/telemetry/worker_metrics.py"),
}

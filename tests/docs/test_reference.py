"""The reference pages against the code, both ways: a name documented but absent from the code
fails, and so does one the code has but the pages do not document.

The generated pages are expanded as the build does (docs/_hooks/reference.py) and read back
as a reader would (their headings and tables' first column), then compared with what the code
declares, found independently of the generator where there is a way to.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from dataclasses import fields
from typing import Any

import pytest

from tests.docs.blocks import DOCS, ROOT

REFERENCE = DOCS / "reference"
NAME_LIKE = re.compile(r"^OQRON$|^(OQRON|DJANGO)_[A-Z0-9_]+$")
_hook = importlib.import_module("tests.docs.reference_hook")


def page(name: str) -> str:
    """A reference page as the build renders it: its reference markers expanded."""
    return _hook.expand((REFERENCE / name).read_text(encoding="utf-8"), f"reference/{name}")


def first_column(markdown: str) -> list[str]:
    """The code spans of every table row's first cell (the documented names)."""
    found = []
    lines = markdown.splitlines()
    for line, following in zip(lines, [*lines[1:], ""], strict=True):
        if line.startswith("| ") and not following.startswith("|---"):  # a header row is not a name
            first = re.split(r"(?<!\\)\|", line)[1]
            found += re.findall(r"`([^`]+)`", first)
    return found


def directives(name: str) -> list[str]:
    return re.findall(r"^::: (\S+)$", (REFERENCE / name).read_text(encoding="utf-8"), re.MULTILINE)


def resolve(path: str) -> Any:
    module, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module), attr)


# -- the Python API --------------------------------------------------------------------------

def test_every_public_name_is_documented_exactly_once():
    import oqronkit

    documented = [p.removeprefix("oqronkit.") for p in directives("api.md") + directives("errors.md")
                  if p.count(".") == 1 or p == "oqronkit.__version__"]
    assert sorted(set(documented)) == sorted(documented), "a name documented twice"
    assert set(documented) - set(oqronkit.__all__) == set(), "documented but not in oqronkit.__all__"
    assert set(oqronkit.__all__) - set(documented) == set(), "in oqronkit.__all__ but not on api.md or errors.md"


def test_every_public_name_has_a_docstring():
    """What mkdocstrings renders: griffe's view, attribute docstrings included."""
    import griffe

    import oqronkit

    package = griffe.load("oqronkit", search_paths=[str(ROOT)])
    documented = [p.removeprefix("oqronkit.") for p in directives("api.md") + directives("errors.md")]
    missing = [name for name in {*oqronkit.__all__, *documented}
               if not (package[name].docstring and package[name].docstring.value.strip())]
    assert missing == [], f"documented names without a docstring: {missing}"


def test_every_directive_names_a_real_object():
    for name in ("api.md", "errors.md"):
        for path in directives(name):
            assert resolve(path) is not None, path


def _exception_classes() -> dict[str, type]:
    import oqronkit

    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(oqronkit.__path__, "oqronkit."):
        if ".migrations" in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, oqronkit.OqronError) and obj.__module__ == info.name
                    and not name.startswith("_")):
                found[f"{info.name}.{name}"] = obj
    return found


def test_every_exception_class_is_on_the_errors_page_and_nothing_else():
    classes = _exception_classes()
    documented = {resolve(path) for path in directives("errors.md")}
    assert {p for p, c in classes.items() if c not in documented} == set(), "exception classes not on errors.md"
    assert [c for c in documented if c not in classes.values()] == [], "errors.md documents a non-exception"
    assert len(classes) >= 25  # the walk found the package's modules


# -- settings and environment variables ------------------------------------------------------

def _scanned_names() -> set[str]:
    """Every OQRON_*/DJANGO_* name the code, the scripts and the test services spell out."""
    found: set[str] = set()
    table = ROOT / "oqronkit" / "settings_table.py"
    for top in ("oqronkit", "oqronboard", "demo"):
        for path in (ROOT / top).rglob("*.py"):
            if path == table or "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME_LIKE.match(node.value):
                    found.add(node.value)
    scripts = [*sorted((ROOT / "bin").iterdir()), ROOT / "tests" / "services.py",
               ROOT / "tests" / "browser" / "harness.py"]
    for path in scripts:
        found |= set(re.findall(r"\b(?:OQRON|DJANGO)_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8")))
    return found


def test_the_settings_table_matches_what_the_code_reads_both_ways():
    from oqronkit.settings_table import DJANGO_ONLY_SETTINGS, DJANGO_SETTINGS, ENVIRONMENT, OQRON_KEYS

    engine_variables = {var for var, _ in OQRON_KEYS.values() if var}
    listed = set(DJANGO_SETTINGS) | set(DJANGO_ONLY_SETTINGS) | set(ENVIRONMENT)
    scanned = _scanned_names()
    assert scanned - listed - engine_variables == set(), "read by the code but not in oqronkit/settings_table.py"
    assert listed - scanned == set(), "in oqronkit/settings_table.py but read nowhere"


def test_the_oqron_keys_are_the_engines_fields_and_their_variables_work():
    from oqronkit import config
    from oqronkit.contrib.django.engine import ALIAS_KEY
    from oqronkit.settings_table import ENGINE_VARIABLES, OQRON_KEYS

    assert set(OQRON_KEYS) == {f.name.upper() for f in fields(config.OqronConfig)} | {ALIAS_KEY}
    assert config._ENV_KEYS is ENGINE_VARIABLES  # the reader uses the table
    samples = {"mode": "postgres", "backend_wait": "7", "module_logs": "queue", "horizon_warning_s": "30"}
    for variable, field in ENGINE_VARIABLES.items():
        assert field in config.settings_from_env({variable: samples.get(field, "x")}), variable


def test_a_django_setting_outside_the_table_is_refused():
    from oqronkit.contrib.django.conf import setting

    with pytest.raises(LookupError, match="OQRON_NOT_A_SETTING"):
        setting("OQRON_NOT_A_SETTING", None, str)


def test_the_settings_and_environment_pages_list_every_name_and_no_other():
    from oqronkit.settings_table import DJANGO_ONLY_SETTINGS, DJANGO_SETTINGS, ENVIRONMENT, OQRON_KEYS

    settings_page = first_column(page("settings.md"))
    assert sorted(settings_page) == sorted([*OQRON_KEYS, *DJANGO_SETTINGS, *DJANGO_ONLY_SETTINGS])
    variables = {var for var, _ in OQRON_KEYS.values() if var} | set(DJANGO_SETTINGS) | set(ENVIRONMENT)
    assert sorted(first_column(page("environment.md"))) == sorted(variables)


# -- the command line ------------------------------------------------------------------------

def test_the_cli_page_has_every_command_and_flag_and_no_other():
    tables = _hook.load_tables()
    rendered = page("cli.md")
    sections = dict(re.findall(r"^### `([^`]+)`\n(.*?)(?=^### |\Z)", rendered, re.MULTILINE | re.DOTALL))
    parsers = dict(tables.cli_parsers())
    assert set(sections) == set(parsers)
    assert {"python -m oqronkit worker", "python manage.py runworker", "python manage.py oqron dead",
            "python manage.py oqron_migrate_v1", "python manage.py oqron_demo"} <= set(sections)
    for line, parser in parsers.items():
        documented = {s for s in first_column(sections[line]) if s.startswith("-")}
        actual = {s for a in tables.own_options(parser) for s in a.option_strings}
        assert documented == actual, line
    assert "--burst" in sections["python manage.py runworker"]


# -- the JSON API ----------------------------------------------------------------------------

def test_the_json_api_page_has_every_endpoint_and_no_other():
    from oqronboard.api import urls

    routes = {f"api/v1/{p.pattern}" for p in urls.urlpatterns if p.name not in ("api-root", "api-not-found")}
    rows = re.findall(r"^\| [A-Z, ]+ \| `(api/v1/[^`]*)` \|", page("json-api.md"), re.MULTILINE)
    assert sorted(rows) == sorted(routes)
    from oqronboard.jobs.views import JOB_ACTIONS

    actions = re.search(r"A job action is one of (.*?) \(", page("json-api.md"))
    assert actions and sorted(re.findall(r"`(\w+)`", actions[1])) == sorted(JOB_ACTIONS)
    assert len(routes) >= 14


# -- metrics ---------------------------------------------------------------------------------

def test_the_metrics_page_has_every_family_and_no_other():
    from prometheus_client.core import CounterMetricFamily

    from oqronkit.telemetry.worker_metrics import WorkerMetrics

    documented = set(first_column(page("metrics.md"))) - {"GET health/live", "GET health/ready"}
    worker = {f"{m.name}_total" if isinstance(m, CounterMetricFamily) or m.type == "counter" else m.name
              for m in WorkerMetrics().registry.collect()}
    board_source = (ROOT / "oqronboard" / "metrics.py").read_text(encoding="utf-8")
    board = set(re.findall(r"\(\s*\"(oqron_[a-z_]+)\",\s*\"", board_source))
    assert documented == worker | board
    assert {"oqron_scrape_section_seconds", "oqron_jobs_failed_total", "oqron_queue_jobs"} <= documented


# -- signals ---------------------------------------------------------------------------------

def test_the_signals_page_has_every_event_and_signal_and_no_other():
    from django.dispatch import Signal

    from oqronkit import EVENTS
    from oqronkit.contrib.django import signals

    text = (REFERENCE / "signals.md").read_text(encoding="utf-8")
    names = first_column(text)
    documented_events = [n for n in names if n in EVENTS or not n.startswith(("job_", "scope_"))]
    documented_signals = [n for n in names if n.startswith(("job_", "scope_"))]
    actual = {name: obj for name, obj in vars(signals).items() if isinstance(obj, Signal)}
    assert sorted(documented_events) == sorted(EVENTS)
    assert sorted(documented_signals) == sorted(actual)
    for name, obj in actual.items():
        if isinstance(obj, signals.LifecycleSignal):
            assert re.search(rf"^\| `{name}` \| `{obj.event}` \|$", text, re.MULTILINE), name


def test_the_reference_index_links_every_reference_page():
    index = (REFERENCE / "index.md").read_text(encoding="utf-8")
    pages = {p.name for p in REFERENCE.glob("*.md")} - {"index.md"}
    assert set(re.findall(r"\]\(([a-z-]+\.md)\)", index)) >= pages


def test_the_reference_pages_are_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert {f"reference/{p.name}" for p in REFERENCE.glob("*.md")} <= set(re.findall(r"(reference/[a-z-]+\.md)", nav))



def test_docstrings_reST_roles_render_as_code_spans():
    roles = importlib.import_module("tests.docs.reference_hook").load_sphinx_roles()
    assert roles.markdown(":func:`oqronkit.queue` adds to a :class:`~oqronkit.Queue` (``retries``)") == (
        "`oqronkit.queue` adds to a `oqronkit.Queue` (`retries`)")

"""The unmanaged models are read-only (habit 10): every ORM write path raises
ReadOnlyModelError before touching the database, and says to use the engine."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from django.db import models

from oqronboard.base.records import ReadOnlyModelError
from oqronboard.definitions.models import Record
from oqronboard.jobs.models import JobRecord
from oqronboard.runs.models import RunRecord
from oqronkit import OqronError

MODELS = [RunRecord, JobRecord, Record]


def instance(model: type[models.Model]) -> models.Model:
    return model(project="p", environment="e", namespace="runs", record_kind="run", id="x",
                 value={"status": "completed"}, inserted_at=1)


WRITES: dict[str, Callable[[type[models.Model]], Any]] = {
    "save": lambda m: instance(m).save(),
    "save(force_insert)": lambda m: instance(m).save(force_insert=True),
    "delete": lambda m: instance(m).delete(),
    "asave": lambda m: asyncio.run(instance(m).asave()),
    "objects.create": lambda m: m.objects.create(id="x"),
    "objects.get_or_create": lambda m: m.objects.get_or_create(id="x"),
    "objects.update_or_create": lambda m: m.objects.update_or_create(id="x", defaults={"value": {}}),
    "objects.update": lambda m: m.objects.update(value={}),
    "filter().update": lambda m: m.objects.filter(id="x").update(value={}),
    "objects.delete": lambda m: m.objects.all().delete(),
    "filter().delete": lambda m: m.objects.filter(namespace="runs").delete(),
    "bulk_create": lambda m: m.objects.bulk_create([instance(m)]),
    "bulk_update": lambda m: m.objects.bulk_update([instance(m)], ["value"]),
    "using().update": lambda m: m.objects.using("default").filter(id="x").update(value={}),
}


@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_write_path_raises_before_touching_the_database(model, write):
    # No database fixture: pytest-django would fail the test on any query, so the
    # refusal is proven to happen before one.
    with pytest.raises(ReadOnlyModelError) as raised:
        WRITES[write](model)
    message = str(raised.value)
    assert model.__name__ in message
    assert "engine" in message and model._meta.db_table in message


def test_the_error_is_an_oqron_error():
    assert issubclass(ReadOnlyModelError, OqronError)
    assert issubclass(ReadOnlyModelError, RuntimeError)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_models_are_unmanaged_with_the_spec_key(model):
    meta = model._meta
    assert meta.managed is False
    assert meta.is_composite_pk
    assert [f.name for f in meta.pk_fields] == ["project", "environment", "namespace", "id"]

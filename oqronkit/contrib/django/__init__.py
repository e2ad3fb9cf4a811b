"""oqronkit's Django integration: add ``"oqronkit.contrib.django"`` to ``INSTALLED_APPS``.

The engine is configured from the ``OQRON`` setting before any user code runs, its
durable plane lives on a database alias of ``DATABASES`` (``OQRON["DATABASE_ALIAS"]``,
``"default"`` unless set), ``migrate`` creates its tables there, ``runworker`` runs the
queues each installed app declares in its ``oqron.py``, and an ``add`` inside
``transaction.atomic()`` commits or rolls back with the host's own rows.
"""

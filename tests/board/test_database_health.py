"""The overview's database health panel and its /metrics gauges (issue 38, item 2): the
transaction holding the xmin horizon (its age, application name, client address), the
engine tables' dead rows and last vacuums, and the warning past OQRON horizon_warning_s."""

from __future__ import annotations

import time

import psycopg
from django.test import Client
from django.urls import reverse

from oqronkit.contrib.django import engine
from tests.board.seed import Board
from tests.board.test_metrics_endpoint import TOKEN, scrape, value

HOLDER = "oqron-test-horizon-holder"


def hold_horizon(url: str) -> psycopg.Connection:
    """A session idle in transaction with a snapshot: it holds every table's dead rows."""
    conn = psycopg.connect(url, application_name=HOLDER)
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    conn.execute("SELECT txid_current()")
    return conn


def warn_after(settings, seconds: float) -> None:
    settings.OQRON = {**settings.OQRON, "HORIZON_WARNING_S": seconds}
    engine.reset()


def test_the_panel_names_the_transaction_holding_the_horizon_and_warns(board: Board, settings, board_pg_url):
    if board.db.alias != "postgres":  # the panel is PostgreSQL's alone
        body = board.viewer.get(reverse("oqronboard:home")).content.decode()
        assert 'data-testid="db-health"' not in body
        return
    warn_after(settings, 0.5)
    board.scope.queue("emails").add_bulk([{"n": i} for i in range(3)])
    body = board.viewer.get(reverse("oqronboard:home")).content.decode()
    assert 'data-testid="db-health"' in body and 'data-testid="horizon-warning"' not in body
    for table in ("oqron_jobs", "oqron_runs", "oqron_records", "oqron_hot_jobs"):
        assert f'data-testid="table-health-{table}"' in body, table
    holder = hold_horizon(board_pg_url)
    try:
        time.sleep(1.0)  # past the scaled-down threshold
        body = board.viewer.get(reverse("oqronboard:home") + "?panel=live", HTTP_HX_REQUEST="true").content.decode()
        panel = body.split('data-testid="db-health"')[1].split("</section>")[0]
        assert 'data-testid="horizon-warning"' in panel
        assert HOLDER in panel.split('data-testid="horizon-holder"')[1]
    finally:
        holder.close()
    body = board.viewer.get(reverse("oqronboard:home")).content.decode()
    assert 'data-testid="horizon-warning"' not in body


def test_metrics_show_the_holder_dead_rows_and_vacuums(board: Board, settings, board_pg_url):
    settings.OQRON_METRICS_TOKEN = TOKEN
    if board.db.alias != "postgres":
        samples = scrape(Client(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert not any(name.startswith("oqron_db_") for name, _ in samples)
        return
    warn_after(settings, 0.5)
    queue = board.scope.queue("emails")
    queue.add_bulk([{"n": i} for i in range(5)])
    with psycopg.connect(board_pg_url, autocommit=True) as conn:
        conn.execute("VACUUM oqron_jobs")  # a vacuum on record
    holder = hold_horizon(board_pg_url)
    try:
        time.sleep(1.0)
        samples = scrape(Client(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    finally:
        holder.close()
    assert value(samples, "oqron_scrape_section_ok", section="database") == 1
    age = value(samples, "oqron_db_oldest_transaction_age_seconds", application_name=HOLDER, client_addr="127.0.0.1")
    assert age is not None and age >= 0.5, {k: v for k, v in samples.items() if k[0].startswith("oqron_db")}
    assert value(samples, "oqron_db_horizon_warning") == 1
    assert value(samples, "oqron_db_table_live_rows", table="oqron_jobs") is not None
    assert value(samples, "oqron_db_table_dead_rows", table="oqron_hot_jobs") is not None
    vacuumed = value(samples, "oqron_db_table_last_vacuum_timestamp_seconds", table="oqron_jobs")
    assert vacuumed is not None and time.time() - 60 < vacuumed <= time.time() + 1
    after = scrape(Client(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert value(after, "oqron_db_horizon_warning") == 0

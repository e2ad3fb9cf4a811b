"""Live updates: the polling interval, the vendored htmx and the board's script."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

import oqronboard
from oqronboard.base.live import DEFAULT_POLL, POLL_COOKIE, poll_trigger
from tests.board.seed import Board, queue_control

STATIC = Path(oqronboard.__file__).parent / "static" / "oqronboard"


@pytest.mark.parametrize(
    ("cookie", "trigger"),
    [(None, "every 5s, board:refresh from:body"), ("2", "every 2s, board:refresh from:body"),
     ("15", "every 15s, board:refresh from:body"), ("off", "board:refresh from:body"),
     ("1", "every 5s, board:refresh from:body"), ("<x>", "every 5s, board:refresh from:body")],
)
def test_panels_poll_at_the_chosen_interval(board: Board, cookie, trigger):
    queue_control(board.plane, "emails")
    if cookie is not None:
        board.viewer.cookies[POLL_COOKIE] = cookie
    body = board.viewer.get(reverse("oqronboard:definitions")).content.decode()
    panel = body.split('id="definitions-live"')[1].split(">")[0]
    assert f'hx-trigger="{trigger}"' in panel and 'hx-sync="this:drop"' in panel and "data-poll" in panel
    chosen = cookie if cookie in ("2", "15", "off") else DEFAULT_POLL
    assert re.search(rf'<option value="{chosen}" selected>', body)


def test_every_live_panel_has_a_stable_hook(board: Board):
    queue_control(board.plane, "emails")
    pages = {reverse("oqronboard:home"): "overview-live", reverse("oqronboard:dead-letters"): "dlq-depth",
             reverse("oqronboard:definitions"): "definitions-live", reverse("oqronboard:queue-jobs",
                                                                            args=["emails"]): "queue-counts"}
    for url, panel in pages.items():
        body = board.viewer.get(url).content.decode()
        assert f'id="{panel}"' in body and 'hx-trigger="every 5s, board:refresh from:body"' in body, url
    assert 'id="dlq-groups"' in board.viewer.get(reverse("oqronboard:dead-letters")).content.decode()


def test_poll_trigger_values():
    assert poll_trigger("off") == "board:refresh from:body"
    assert poll_trigger("2") == "every 2s, board:refresh from:body"


def test_htmx_is_vendored_with_its_version_and_licence():
    htmx = STATIC / "vendor" / "htmx.min.js"
    readme = (STATIC / "vendor" / "README").read_text()
    assert htmx.stat().st_size > 30_000
    assert "htmx.org 2.0.11" in readme and "0BSD" in readme
    assert "Zero-Clause BSD" in (STATIC / "vendor" / "htmx.LICENSE").read_text()
    assert 'version:"2.0.11"' in htmx.read_text() or '"2.0.11"' in htmx.read_text()


def test_the_board_script_never_evaluates_code():
    script = (STATIC / "js" / "board.js").read_text()
    for forbidden in ("eval(", "new Function", "innerHTML", "setTimeout(\"", "document.write"):
        assert forbidden not in script, forbidden
    for feature in ("visibilitychange", "htmx:beforeRequest", "htmx-request", "document.hidden", '"/"', '"j"',
                    '"k"', '"r"', "data-operator", POLL_COOKIE):
        assert feature in script, feature


@pytest.mark.django_db
def test_the_page_shell_loads_our_static_files_only(admin_client):
    body = admin_client.get(reverse("oqronboard:home")).content.decode()
    sources = re.findall(r'<script src="([^"]+)"', body) + re.findall(r'<link rel="stylesheet" href="([^"]+)"', body)
    assert sources == ["/static/oqronboard/vendor/htmx.min.js", "/static/oqronboard/js/board.js",
                       "/static/oqronboard/css/board.css"]
    assert '"includeIndicatorStyles": false' in body and '"allowEval": false' in body
    for source in sources:
        assert admin_client.get(source).status_code == 200


def test_the_stylesheet_follows_the_system_theme_and_small_screens():
    css = (STATIC / "css" / "board.css").read_text()
    assert "@media (prefers-color-scheme: dark)" in css and "@media (max-width: 40rem)" in css
    assert ".env-badge.env-production" in css

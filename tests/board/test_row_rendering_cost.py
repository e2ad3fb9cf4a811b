"""Pages of many rows render each row without per-row template work that costs more than
the row: no ``{% url %}`` reversed per replay pair, no lookup a definition record lacks
(a failed lookup walks ``dir()`` and logs, ~10 us). Each cost is counted at two sizes
and must not grow with the rows; what the rows show is checked beside it."""

from __future__ import annotations

import logging
from unittest import mock

from django.urls import reverse
from django.urls.resolvers import URLResolver

from oqronkit.namespaces import job_namespace
from oqronkit.replay import replay
from tests.board.seed import Board, error, put_runs, queue_control, run_value
from tests.board.test_replays import HOSTILE, finish_replays


class FailedLookups(logging.Handler):
    """Counts the template engine's "Exception while resolving variable" records."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += record.getMessage().startswith("Exception while resolving variable")


def failed_lookups(board: Board, url: str) -> int:
    logger, counter = logging.getLogger("django.template"), FailedLookups()
    level = logger.level
    logger.addHandler(counter)
    logger.setLevel(logging.DEBUG)
    try:
        assert board.viewer.get(url).status_code == 200
    finally:
        logger.removeHandler(counter)
        logger.setLevel(level)
    return counter.count


def test_definition_rows_look_up_nothing_they_lack(board: Board):
    queue_control(board.plane, "emails")
    board.plane.put("worker", "w1", {"name": "w1", "handler": "app.w1", "concurrency": 2})
    url = reverse("oqronboard:definitions")
    few = failed_lookups(board, url)
    for i in range(30):  # records with no handler, concurrency or batch
        board.plane.put("cron", f"nightly-{i:02d}", {"expression": "0 3 * * *"})
    assert failed_lookups(board, url) == few
    body = board.viewer.get(url).content.decode()
    assert body.count('data-testid="definition-cron-nightly-') == 30
    assert "<summary class=\"small\">app.w1 · concurrency 2</summary>" in body
    assert "<summary class=\"small\">JSON</summary>" in body and "&quot;expression&quot;: &quot;0 3 * * *&quot;" in body
    assert f'<a href="{reverse("oqronboard:queue-jobs", args=["emails"])}" data-open>emails</a>' in body
    board.plane.put("cron", HOSTILE, {"handler": HOSTILE, "concurrency": 1000, "note": HOSTILE})
    body = board.viewer.get(url).content.decode()
    assert HOSTILE not in body and 'data-testid="definition-cron-&lt;script&gt;alert(1)&lt;/script&gt;"' in body
    assert '<summary class="small">&lt;script&gt;alert(1)&lt;/script&gt; · concurrency 1000</summary>' in body


def replay_page_reverses(board: Board, set_id: str) -> int:
    with mock.patch.object(URLResolver, "_reverse_with_prefix", autospec=True,
                           side_effect=URLResolver._reverse_with_prefix) as reversing:
        assert board.viewer.get(reverse("oqronboard:replay", args=[set_id])).status_code == 200
    return reversing.call_count


def test_replay_pairs_reverse_each_link_pattern_once(board: Board):
    queue_control(board.plane, "pricing")
    board.plane.put("queue", "pricing", {**board.plane.get("queue", "pricing").value, "replayable": True})
    put_runs(board.plane, [run_value(f"p{i}", name="pricing", job_id=f"j{i}", output={"net": i})
                           for i in range(40)])
    small = replay(board.scope.engine, run_ids=["p0", "p1"], user="olivia")
    large = replay(board.scope.engine, run_ids=[f"p{i}" for i in range(40)], user="olivia")
    assert replay_page_reverses(board, large) == replay_page_reverses(board, small)


def test_replay_rows_show_each_outcome_escaped(board: Board):
    queue_control(board.plane, "pricing")
    board.plane.put("queue", "pricing", {**board.plane.get("queue", "pricing").value, "replayable": True})
    put_runs(board.plane, [run_value("same", name="pricing", job_id="j1", output={"net": 1}),
                           run_value("differs", name="pricing", job_id="j2", output={"net": 2, "gone": True}),
                           run_value("breaks", name="pricing", job_id="j3", output={"net": 3}),
                           run_value("waits-for-its-replay", name="pricing", job_id="j4", output={"net": 4})])
    set_id = replay(board.scope.engine, run_ids=["same", "differs", "breaks"], user="olivia")
    finish_replays(board, set_id, {"same": {"net": 1}, "differs": {"net": HOSTILE, "tag": [1]},
                                   "breaks": {"net": 3}})
    broken = next(r for r in board.plane.list("runs", limit=50).records if r.value.get("replayOf") == "breaks")
    put_runs(board.plane, [{**broken.value, "status": "failed", "output": None, "error": error(HOSTILE, "KeyError")}])
    pending = replay(board.scope.engine, run_ids=["waits-for-its-replay"], user="olivia")
    body = board.viewer.get(reverse("oqronboard:replay", args=[set_id])).content.decode()
    assert HOSTILE not in body
    assert body.count('data-testid="replay-pair"') == 3 and "1 identical, 1 changed, 1 failed" in body
    run_url = reverse("oqronboard:run", args=["differs"])
    assert f'<td><a href="{run_url}"><code>differs</code></a></td>' in body
    assert ('<li><span class="status">changed</span> <code>$.net</code> <code>2</code> → '
            '<code>&quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;</code></li>') in body
    assert '<li><span class="status">removed</span> <code>$.gone</code> <code>true</code></li>' in body
    assert '<li><span class="status">added</span> <code>$.tag</code> <code>[\n  1\n]</code></li>' in body
    assert "<code>KeyError: &lt;script&gt;alert(1)&lt;/script&gt;</code>" in body
    waiting = board.viewer.get(reverse("oqronboard:replay", args=[pending])).content.decode()
    [job_id] = [r.id for r in board.plane.list(job_namespace("pricing"), limit=50).records
                if r.value.get("replaySet") == pending]
    assert f'<a href="{reverse("oqronboard:job", args=["pricing", job_id])}">job</a>' in waiting
    assert '<span class="status status-pending" data-testid="pair-state">pending</span>' in waiting

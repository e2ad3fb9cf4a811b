"""(Re)generate the board's screenshots in docs/screenshots/, light and dark.

    .venv/bin/python -m tests.browser.screenshots [--out docs/screenshots] [--themes light,dark] [--only REGEX]

Starts the same live board as the browser tests (``tests/browser/harness.py``:
``runserver`` and a real ``runworker`` on a temporary SQLite file) with the project's
demo workload (``--workload demo``, the default: ``bin/demo``'s queues, logins and
jobs) or the browser tests' (``--workload tests``), waits for failed runs, dead letters
and a running job with progress, then retries one dead letter and pauses a queue
through the pages so the audit log has entries. Chromium then visits every page as an
operator, once per colour scheme, and writes ``<page>-<theme>.png`` (``--only``: the
pages whose file stem matches) and an index of every page, ``README.md``. Needs
/usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.browser.harness import ROOT, LiveBoard, chromium, default_workload, live_board, log_in, wait_for

OUT = ROOT / "docs" / "screenshots"
DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}


@dataclass(frozen=True)
class Shot:
    """One screenshot: its file stem, what it shows, and how to get there."""

    slug: str
    caption: str
    visit: Callable[[Any, LiveBoard], None]
    viewport: dict[str, int] | None = None
    logged_in: bool = True


def nav(testid: str) -> Callable[[Any, LiveBoard], None]:
    def visit(page: Any, board: LiveBoard) -> None:
        page.goto("/")
        page.locator(f'[data-testid="{testid}"]').first.click()
        page.wait_for_load_state()

    return visit


def login_page(page: Any, board: LiveBoard) -> None:
    page.goto("/accounts/login/")


def well_under_way(board: LiveBoard) -> dict[str, Any] | None:
    """A running ``reports`` run between 25 % and 90 % done, or None."""
    plane = board.durable()
    try:
        runs = plane.list("runs", status="running", name="reports", order="started", descending=True, limit=10)
    finally:
        plane.close()
    return next((r.value for r in runs.records if 25 <= (r.value.get("progressPercent") or 0) <= 90), None)


def running_run_page(page: Any, board: LiveBoard) -> None:
    """The run detail of a ``reports`` job part-way through (live progress bar, logs)."""
    run = wait_for(lambda: well_under_way(board), timeout=60, what="a reports run 25-90 % done", board=board)
    page.goto("/runs/?status=running&name=reports&window=1h")
    page.locator(f'a[href*="{run["id"]}"]').first.click()
    page.locator('[data-testid="progress"]').wait_for()


def failed_run_page(page: Any, board: LiveBoard) -> None:
    nav("nav-failed")(page, board)
    page.locator('[data-testid="failed-run-row"] a').first.click()
    page.wait_for_load_state()


def job_page(page: Any, board: LiveBoard) -> None:
    """A dead job's page (its runs and actions), reached from the dead-letter list."""
    nav("nav-dead")(page, board)
    page.locator('[data-testid="dead-row"] a[href*="/jobs/"]').first.click()
    page.wait_for_load_state()


def queue_page(page: Any, board: LiveBoard) -> None:
    """The ``reports`` queue's active jobs."""
    nav("nav-jobs")(page, board)
    page.locator('[data-testid="queues-table"] a', has_text="reports").first.click()
    page.locator('[data-testid="tab-active"]').click()
    page.wait_for_load_state()


def topic_page(page: Any, board: LiveBoard) -> None:
    """The first topic's retained log, reached from the Topics page."""
    nav("nav-topics")(page, board)
    page.locator('[data-testid^="topic-link-"]').first.click()
    page.wait_for_load_state()


def message_page(page: Any, board: LiveBoard) -> None:
    """A message of the first topic whose delivery to some group died (if any)."""
    topic_page(page, board)
    page.locator('[data-testid="message-row"] a[data-open]').first.click()
    page.wait_for_load_state()


SHOTS = [
    Shot("login", "Login page", login_page, logged_in=False),
    Shot("overview", "Overview: per-queue depths, throughput and failure rate, workers", nav("nav-overview")),
    Shot("overview-phone", "Overview on a phone-sized screen", nav("nav-overview"), viewport=PHONE),
    Shot("failed-runs", "Failed runs (last 24 h)", nav("nav-failed")),
    Shot("runs", "Runs with filters", nav("nav-runs")),
    Shot("run-running", "A running run: live progress bar and logs", running_run_page),
    Shot("run-failed", "A failed run: error, traceback, input, the job's other runs", failed_run_page),
    Shot("jobs", "Jobs: queues and their depths", nav("nav-jobs")),
    Shot("queue-jobs", "One queue's jobs by status", queue_page),
    Shot("job", "A dead job with its runs and actions", job_page),
    Shot("dead-letters", "Dead letters: depth per queue, failures grouped by error", nav("nav-dead")),
    Shot("definitions", "Definitions and their control state (pause / resume)", nav("nav-definitions")),
    Shot("topics", "Topics: retained messages, rate, and each consumer group's lag and dead letters",
         nav("nav-topics")),
    Shot("topic-log", "A topic's retained log, newest first, with its groups", topic_page),
    Shot("topic-message", "A message: payload, headers, its delivery to each group", message_page),
    Shot("schedules", "Schedules: each cron and schedule, its next fires, last run and counters",
         nav("nav-schedules")),
    Shot("webhooks", "Webhooks: deliveries in flight and dead, each endpoint's breaker and success rate",
         nav("nav-webhooks")),
    Shot("logs", "The engine's module logs, newest first", nav("nav-logs")),
    Shot("limits", "Rate limiters: algorithm, tiers, a key's usage", nav("nav-limits")),
    Shot("caches", "Caches: TTL, tags, hits, misses and hit ratio", nav("nav-caches")),
    Shot("planes", "Plane drift: where the hot plane disagrees with the durable plane, what the reconciler repaired",
         nav("planes-link")),
    Shot("audit", "Audit log of operator actions", nav("nav-audit")),
]


@dataclass(frozen=True)
class Workload:
    """How to fill the board: the live board's mode, the login, the queue to pause."""

    demo: bool
    username: str
    pause: str
    prepare: Callable[[LiveBoard], None]


def tests_workload(board: LiveBoard) -> None:
    """The browser tests' workload, bigger; wait until the quick jobs are done."""
    default_workload(board, flaky=14, steady=40, slow=2)
    plane = board.durable()
    try:
        wait_for(lambda: plane.count("queue_job:emails") == 0, timeout=30, what="the emails jobs to finish")
    finally:
        plane.close()


def demo_workload(board: LiveBoard) -> None:
    """``manage.py oqron_demo`` enqueued it; wait for dead letters and finished runs."""
    plane = board.durable()
    try:
        wait_for(lambda: plane.count(kind="dlq") >= 4, timeout=60, what="demo dead letters", board=board)
        wait_for(lambda: plane.count("queue_job:emails") == 0, timeout=60, what="the first emails to settle",
                 board=board)
        wait_for(lambda: plane.count("queue_dlq:order-events@billing") >= 1, timeout=60,
                 what="a dead delivery in order-events@billing", board=board)
        # The Schedules page with a last run: the demo cron fires every minute.
        wait_for(lambda: plane.list("runs", name="stock-digest", limit=1).records, timeout=90,
                 what="a run of the demo cron stock-digest", board=board)
    finally:
        plane.close()


WORKLOADS = {
    "demo": Workload(demo=True, username="demo", pause="thumbnails", prepare=demo_workload),
    "tests": Workload(demo=False, username="operator", pause="emails", prepare=tests_workload),
}


def operator_actions(page: Any, pause: str) -> None:
    """Retry one dead letter and pause a queue, through the pages (for the audit log)."""
    page.goto("/")
    page.locator('[data-testid="nav-dead"]').click()
    page.locator('[data-testid="dead-row"] [data-testid^="retry-"]').first.click()
    page.locator('[data-testid="retried-row"]').first.wait_for()
    page.locator('[data-testid="nav-definitions"]').click()
    page.locator(f'[data-testid="pause-{pause}"]').click()
    page.locator(f'[data-testid="resume-{pause}"]').wait_for()


def shown(path: Path) -> Path:
    """``path`` relative to the checkout when inside it (``--out`` may be anywhere)."""
    return path.relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path


def take(browser: Any, board: LiveBoard, state: str, theme: str, out: Path, only: str = "") -> list[Path]:
    written = []
    for shot in SHOTS:
        if only and not re.search(only, shot.slug):
            continue
        context = browser.new_context(
            base_url=board.url, color_scheme=theme, viewport=shot.viewport or DESKTOP,
            storage_state=state if shot.logged_in else None, device_scale_factor=1,
        )
        context.set_default_timeout(15_000)
        page = context.new_page()
        shot.visit(page, board)
        page.wait_for_load_state("networkidle")
        time.sleep(0.3)
        path = out / f"{shot.slug}-{theme}.png"
        page.screenshot(path=str(path), full_page=True)
        written.append(path)
        print(f"  {shown(path)}")
        context.close()
    return written


def write_index(out: Path, themes: list[str], workload: str) -> None:
    source = ("the demo workload of `bin/demo`" if workload == "demo"
              else "the browser tests' workload (`tests/browser/workload/oqron.py`)")
    lines = [
        "# Screenshots",
        "",
        f"The board with {source}: failed runs, dead letters, a running job with",
        "progress, one retried dead letter and a paused queue; in the light and dark",
        "themes (the board follows the system's colour scheme). Regenerate them with",
        "`.venv/bin/python -m tests.browser.screenshots` (needs /usr/bin/chromium).",
        "",
        "| page | " + " | ".join(themes) + " |",
        "|---|" + "---|" * len(themes),
    ]
    for shot in SHOTS:
        cells = " | ".join(f"[{t}]({shot.slug}-{t}.png)" for t in themes)
        lines.append(f"| {shot.caption} | {cells} |")
    (out / "README.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--themes", default="light,dark")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="demo")
    parser.add_argument("--only", default="", help="take only the pages whose file stem matches this regex")
    args = parser.parse_args(argv)
    themes = [t for t in args.themes.split(",") if t]
    workload = WORKLOADS[args.workload]
    args.out.mkdir(parents=True, exist_ok=True)
    with chromium() as browser, live_board(workload=workload.prepare, demo=workload.demo) as board:
        context = browser.new_context(base_url=board.url)
        context.set_default_timeout(15_000)
        page = context.new_page()
        log_in(page, board, workload.username)
        operator_actions(page, workload.pause)
        state = str(board.workdir / "operator.json")
        context.storage_state(path=state)
        context.close()
        for theme in themes:
            print(f"{theme}:")
            take(browser, board, state, theme, args.out, args.only)
    write_index(args.out, themes, args.workload)
    print(f"index: {shown(args.out / 'README.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

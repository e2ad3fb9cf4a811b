"""``throughput.py --against``'s table: each of our systems against its twin from the other
revision (``<name>~base``), as the median of the per-repetition ratios with their spread.

The twins run in the same repetition, in the shuffled order, so each ratio compares two
phases measured minutes apart at most; the median of those ratios is steadier than the
ratio of the medians on a machine whose load changes.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

#: (column, key in a run's figures, True when higher is better)
FIGURES = (("process/s", "process", True), ("excl start-up", "process_excl_startup", True),
           ("worker CPU us/job", "cpu_us", False), ("bulk enqueue/s", "bulk", True),
           ("single enqueue/s", "single", True), ("latency p50", "lat_p50", False))


def spread(base: list[dict[str, Any]], this: list[dict[str, Any]], key: str) -> str:
    ratios = [t[key] / b[key] for b, t in zip(base, this, strict=False) if t.get(key) and b.get(key)]
    if not ratios:
        return "-"
    return f"{statistics.median(ratios):.3f} [{min(ratios):.2f}-{max(ratios):.2f}]"


def print_ab(results: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    """One row per system measured on both revisions: this/base per figure."""
    pairs = [(name.removesuffix("~base"), name) for name in results if name.endswith("~base")]
    print(f"\nA/B against {args.against}: this/base per repetition, median [lowest-highest] of {args.repeat}")
    print("| system | " + " | ".join(column for column, _, _ in FIGURES) + " |")
    print("|---" * (len(FIGURES) + 1) + "|")
    for here, there in pairs:
        cells = [spread(results[there], results[here], key) for _, key, _ in FIGURES]
        print(f"| {here} | " + " | ".join(cells) + " |")
    better = ", ".join(f"{column} {'above' if higher else 'below'} 1" for column, _, higher in FIGURES)
    print(f"this checkout is better where: {better}")

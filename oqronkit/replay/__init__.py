"""Replaying past runs and diffing their outputs (docs/how-to/replay-and-diff.md)."""

from .create import MAX_REPLAYS, REPLAY_SETS, ReplayRefused, create_replay_set, is_replayable, replay, select_runs
from .diff import Change, format_path, json_diff
from .pages import read_replay_set
from .report import ReplayPair, ReplaySet, list_replay_sets

__all__ = [
    "MAX_REPLAYS", "REPLAY_SETS", "Change", "ReplayPair", "ReplayRefused", "ReplaySet", "create_replay_set",
    "format_path", "is_replayable", "json_diff", "list_replay_sets", "read_replay_set", "replay", "select_runs",
]

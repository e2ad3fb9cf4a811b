"""Metrics history beyond an hour, from the durable plane alone: the leader rolls runs
up into minute, hour and day buckets (rollup.py), which the board, the JSON API and the
CLI read through :meth:`oqronkit.Engine.metrics_history` (read.py); deploy markers
(deploys.py) say when a worker's code version changed."""

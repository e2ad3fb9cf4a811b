"""The demo app: a few queues with handlers that fail sometimes and slow ones that
report progress, so a newcomer sees failed runs, dead letters, retries and live progress
on the board within a minute (``bin/demo``)."""

"""A queue and everything about one: enqueue, jobs, runs, control, limits, gates, windows,
uniqueness, debounce, dependencies, backoff and batches."""

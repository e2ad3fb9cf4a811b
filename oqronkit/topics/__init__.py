"""Pub/sub topics: a retained, partitioned message log with consumer groups."""

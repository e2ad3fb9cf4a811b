"""Run history and the retained pub/sub message log (table oqron_runs)."""

"""Jobs and dead letters (table oqron_jobs)."""

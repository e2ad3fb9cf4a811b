"""A tiny Django app whose ``oqron.py`` declares the queues the browser tests drive."""

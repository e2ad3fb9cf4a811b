"""Definitions, control state, webhook endpoints, breakers and module logs (oqron_records)."""

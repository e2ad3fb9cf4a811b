"""The board's JSON API under ``/api/v1/``: the board's reads and actions for scripts,
with the same queries, permission checks and audit records (docs/reference/json-api.md)."""

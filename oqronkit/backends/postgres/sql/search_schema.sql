-- The dead letters' text search (the board's "q" filter: the last error's message,
-- case-insensitive, anywhere in it), served by a trigram index instead of reading every
-- dead letter. Optional: pg_trgm ships with PostgreSQL's contrib package and is a
-- trusted extension (a database owner may create it), but a server without contrib, or
-- a role without CREATE on the database, cannot. PostgresDurableStore.ensure_schema()
-- runs these apart from schema.sql, in their own transaction, only while the index is
-- missing; when they fail the search still works, by a scan of the dead letters.

-- name: search_lock
SELECT pg_advisory_xact_lock(hashtext('oqronkit:ensure_schema'));

-- name: search_extension
-- In the first schema of the search path, unless the database has it already.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- name: search_extension_schema
SELECT n.nspname FROM pg_extension AS e JOIN pg_namespace AS n ON n.oid = e.extnamespace
WHERE e.extname = 'pg_trgm';

-- name: search_index
-- The expression is the board's filter, as Django renders icontains on
-- JsonText("lastError", "message"): UPPER((value->'lastError'->>'message')::text)
-- LIKE UPPER('%...%'). Only dead letters enter it (partial), so no enqueue pays for it.
-- The operator class is qualified with the extension's schema ({trgm}), which need not
-- be on the search path.
CREATE INDEX IF NOT EXISTS oqron_jobs_dlq_message_trgm_idx
    ON oqron_jobs USING gin ((upper((value->'lastError'->>'message'))) {trgm}.gin_trgm_ops)
    WHERE record_kind = 'dlq';

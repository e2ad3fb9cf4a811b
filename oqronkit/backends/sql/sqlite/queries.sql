-- OqronKit durable plane on SQLite: every statement SQLiteDurableStore runs.
--
-- {table} is replaced, once at import, by one of the three fixed table names
-- (oqron_records, oqron_jobs, oqron_runs) and by nothing else; every value is a `?`
-- parameter. Queries named and_* / after_* / order_* / limit are fragments that
-- sqlite.py appends to list_select or count_select, so an optional filter never
-- needs SQL built from strings.
--
-- The run-field expressions are spelled exactly as in schema.sql's expression indexes,
-- json_extract(value, '$.field'): SQLite uses such an index only for the same expression.

-- name: begin_immediate
-- Take the write lock up front: a deferred transaction that reads, then writes, can
-- fail with "database is locked" when another process wrote in between.
BEGIN IMMEDIATE;

-- name: commit
COMMIT;

-- name: rollback
ROLLBACK;

-- name: journal_mode_wal
-- Readers never block the writer and the writer never blocks readers. Returns the mode.
PRAGMA journal_mode = WAL;

-- name: synchronous_normal
-- Durable across application crashes; in WAL mode only a power loss can drop the last
-- commits, which is the usual trade-off for a local job store.
PRAGMA synchronous = NORMAL;

-- name: schema_object_names
-- Every table and index of the file: a schema script whose objects all exist is skipped.
SELECT name FROM sqlite_master WHERE type IN ('table', 'index');

-- name: has_table
SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?;

-- name: upsert
-- Insert or replace one row; an existing row keeps its inserted_at.
INSERT INTO {table} (project, environment, namespace, record_kind, id, value, inserted_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (project, environment, namespace, id) DO UPDATE SET
    value = excluded.value,
    record_kind = excluded.record_kind,
    expires_at = excluded.expires_at;

-- name: insert_if_free
-- Insert one row unless its key exists; returns a row only when it inserted.
INSERT INTO {table} (project, environment, namespace, record_kind, id, value, inserted_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (project, environment, namespace, id) DO NOTHING
RETURNING id;

-- name: insert_new
-- insert_new: a taken key fails the statement (and the caller's transaction).
INSERT INTO {table} (project, environment, namespace, record_kind, id, value, inserted_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?);

-- name: scan_statuses
-- scan_statuses: a walk of the primary key in id order after a cursor id; every row is
-- returned, flagged with whether its status is wanted, so a page full of other statuses
-- still advances the cursor.
SELECT id, json_extract(value, '$.status'),
       json_extract(value, '$.status') IN (SELECT value FROM json_each(?5))
FROM {table}
WHERE project = ?1 AND environment = ?2 AND namespace = ?3 AND id > ?4
ORDER BY id
LIMIT ?6;

-- name: get_many
-- The rows of one namespace among a JSON array of ids (one statement for any count).
SELECT namespace, id, record_kind, value, inserted_at, expires_at
FROM {table}
WHERE project = ? AND environment = ? AND namespace = ?
  AND id IN (SELECT ids.value FROM json_each(?) AS ids);

-- name: get_value
-- The current value of one row, read inside compare-and-set's write transaction.
SELECT value FROM {table}
WHERE project = ? AND environment = ? AND namespace = ? AND id = ?;

-- name: delete_one
DELETE FROM {table}
WHERE project = ? AND environment = ? AND namespace = ? AND id = ?;

-- name: delete_many
-- Delete the rows of one namespace among a JSON array of ids.
DELETE FROM {table}
WHERE project = ? AND environment = ? AND namespace = ?
  AND id IN (SELECT ids.value FROM json_each(?) AS ids);

-- name: count_by_namespace
-- Row counts of one kind per namespace (e.g. DLQ depth per queue).
SELECT namespace, count(*) FROM {table}
WHERE project = ? AND environment = ? AND record_kind = ?
GROUP BY namespace;

-- name: prune_expired
DELETE FROM {table}
WHERE project = ? AND environment = ? AND expires_at IS NOT NULL AND expires_at <= ?;

-- name: prune_older_than
-- A bounded batch of the oldest rows of one namespace, so retention never holds the
-- write lock for long.
DELETE FROM {table}
WHERE project = ? AND environment = ? AND namespace = ?
  AND id IN (
      SELECT id FROM {table}
      WHERE project = ? AND environment = ? AND namespace = ? AND inserted_at < ?
      ORDER BY inserted_at, id
      LIMIT ?
  );

-- name: count_select
-- Rows of one scope; and_namespace / and_kind narrow it.
SELECT count(*) FROM {table}
WHERE project = ? AND environment = ?

-- name: list_select
-- One page of one scope; the and_* fragments filter it, then optionally an after_*
-- fragment, then exactly one order_* fragment and limit.
SELECT namespace, id, record_kind, value, inserted_at, expires_at
FROM {table}
WHERE project = ? AND environment = ?

-- name: and_namespace
AND namespace = ?

-- name: and_kind
AND record_kind = ?

-- name: and_namespace_unindexed
-- The same test, kept away from the planner (unary +) when a run field is filtered on
-- oqron_runs: otherwise SQLite may walk every run of the namespace through
-- oqron_runs_started_idx instead of seeking oqron_runs_status_idx (or name/module).
AND +namespace = ?

-- name: and_kind_unindexed
AND +record_kind = ?

-- name: and_status
-- json_type keeps an object or array whose JSON text happens to equal the wanted string
-- from matching (Python compares values, not text).
AND json_extract(value, '$.status') = ? AND json_type(value, '$.status') = 'text'

-- name: and_name
AND json_extract(value, '$.name') = ? AND json_type(value, '$.name') = 'text'

-- name: and_module
AND json_extract(value, '$.module') = ? AND json_type(value, '$.module') = 'text'

-- name: and_correlation
-- Served by the oqron_*_correlation_idx partial indexes (schema.sql).
AND json_extract(value, '$.correlationId') = ? AND json_type(value, '$.correlationId') = 'text'

-- name: and_has_started
-- Rows without a numeric startedAt are never listed by start time (booleans are
-- 'true'/'false' to json_type, so they are excluded as in Python).
AND json_type(value, '$.startedAt') IN ('integer', 'real')

-- name: and_started_from
AND json_extract(value, '$.startedAt') >= ?

-- name: and_started_to
AND json_extract(value, '$.startedAt') < ?

-- name: after_started_asc
-- Keyset: rows after the cursor's (startedAt, id). The scalar bound before the row
-- value is redundant but lets SQLite seek the index: it does not turn a row-value
-- comparison over an expression into an index range.
AND json_extract(value, '$.startedAt') >= ? AND (json_extract(value, '$.startedAt'), id) > (?, ?)

-- name: after_started_desc
AND json_extract(value, '$.startedAt') <= ? AND (json_extract(value, '$.startedAt'), id) < (?, ?)

-- name: after_inserted_asc
AND inserted_at >= ? AND (inserted_at, id) > (?, ?)

-- name: after_inserted_desc
AND inserted_at <= ? AND (inserted_at, id) < (?, ?)

-- name: order_started_asc
ORDER BY json_extract(value, '$.startedAt') ASC, id ASC

-- name: order_started_desc
ORDER BY json_extract(value, '$.startedAt') DESC, id DESC

-- name: order_inserted_asc
ORDER BY inserted_at ASC, id ASC

-- name: order_inserted_desc
ORDER BY inserted_at DESC, id DESC

-- name: limit
LIMIT ?

-- name: read_log
-- A log partition after an offset, by offset (served by oqron_runs_log_offset_idx).
SELECT namespace, id, record_kind, value, inserted_at, expires_at
FROM {table}
WHERE project = ? AND environment = ? AND namespace = ? AND record_kind = 'message'
  AND json_extract(value, '$.partition') = ? AND json_extract(value, '$.offset') > ?
ORDER BY json_extract(value, '$.offset')
LIMIT ?;

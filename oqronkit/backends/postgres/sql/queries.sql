-- Named queries of the PostgreSQL durable store (loaded by oqronkit.backends.sqlfiles).
--
-- {table} is the only varying identifier: the store fills it with
-- psycopg.sql.Identifier after checking the name against the three spec tables.
-- {started} is filled with one of the two startedAt key expressions below. Every
-- value is a bound parameter. Fragments (names starting with where_, after_, order_)
-- are joined by the store into one list or count statement.
--
-- Note: psycopg scans the whole text for placeholders, comments included, so comments
-- here never contain a percent sign or braces other than the two fill-ins above.
--
-- Batch lookups by key (id = ANY) pass the key's leading values as (SELECT value): the
-- planner then costs them as an unknown value (1 / n_distinct) instead of by their
-- statistics. With plain values, a project, environment or namespace the statistics
-- have not seen (a new queue, a bulk enqueue into an empty one) is estimated at about
-- one row, and the batch is answered by walking all that namespace's rows with the ids
-- as a filter: once per batch, so the cost grows with the backlog (measured: 8.6 ms
-- instead of 0.16 ms for 35 ids among 20,000 jobs; half the worker's throughput).

-- name: schema_drift
-- The schema's objects that do not resolve on the search_path, and retired ones that still do.
SELECT name FROM unnest(%(names)s::text[]) AS t(name) WHERE to_regclass(name) IS NULL
UNION ALL
SELECT name FROM unnest(%(retired)s::text[]) AS t(name) WHERE to_regclass(name) IS NOT NULL
UNION ALL
SELECT name FROM unnest(%(statistics)s::text[]) AS t(name)
WHERE NOT EXISTS (SELECT 1 FROM pg_statistic_ext s JOIN pg_namespace n ON n.oid = s.stxnamespace
                  WHERE s.stxname = t.name AND n.nspname = current_schema());

-- name: has_table
SELECT to_regclass(%(name)s) IS NOT NULL;

-- name: upsert_rows
-- put_many: one statement per table per chunk; columns arrive as parallel arrays and
-- value as the JSON text the facade encoded. The arrays are sent in binary format (the
-- b placeholders): psycopg escapes a text-format array element by element in Python,
-- which for kilobyte JSON values cost more than the whole insert. An existing row
-- keeps its inserted_at.
INSERT INTO {table} (project, environment, namespace, record_kind, id, value, inserted_at, expires_at)
SELECT %(project)s, %(environment)s, r.namespace, r.record_kind, r.id, r.value::jsonb, r.inserted_at, r.expires_at
FROM unnest(%(namespaces)b::text[], %(kinds)b::text[], %(ids)b::text[], %(values)b::text[],
            %(inserted)b::bigint[], %(expires)b::bigint[])
     AS r(namespace, record_kind, id, value, inserted_at, expires_at)
ON CONFLICT (project, environment, namespace, id) DO UPDATE
SET value = EXCLUDED.value, record_kind = EXCLUDED.record_kind, expires_at = EXCLUDED.expires_at;

-- name: insert_fresh_rows
-- apply, for rows hinted new (RecordWrite.new: a run written for the first time): the
-- upsert above without its conflict arbitration, which costs each row an extra probe
-- of the primary key (~4 of ~48 us of server CPU per run row, measured). A taken key
-- fails the statement, and apply writes the whole batch again with upsert_rows.
INSERT INTO {table} (project, environment, namespace, record_kind, id, value, inserted_at, expires_at)
SELECT %(project)s, %(environment)s, r.namespace, r.record_kind, r.id, r.value::jsonb, r.inserted_at, r.expires_at
FROM unnest(%(namespaces)b::text[], %(kinds)b::text[], %(ids)b::text[], %(values)b::text[],
            %(inserted)b::bigint[], %(expires)b::bigint[])
     AS r(namespace, record_kind, id, value, inserted_at, expires_at);

-- name: insert_rows
-- insert_many (and compare_and_set against ABSENT): rows whose key is taken are left
-- alone; RETURNING names the rows this statement inserted, race-free.
INSERT INTO {table} (project, environment, namespace, record_kind, id, value, inserted_at, expires_at)
SELECT %(project)s, %(environment)s, r.namespace, r.record_kind, r.id, r.value::jsonb, r.inserted_at, r.expires_at
FROM unnest(%(namespaces)b::text[], %(kinds)b::text[], %(ids)b::text[], %(values)b::text[],
            %(inserted)b::bigint[], %(expires)b::bigint[])
     AS r(namespace, record_kind, id, value, inserted_at, expires_at)
ON CONFLICT (project, environment, namespace, id) DO NOTHING
RETURNING namespace, id;

-- name: copy_rows
-- insert_new: rows with fresh keys, streamed; a taken key fails the whole COPY.
COPY {table} (project, environment, namespace, record_kind, id, value, inserted_at, expires_at) FROM STDIN

-- name: scan_statuses
-- scan_statuses (the reconciler's pass): a walk of the primary key in id order after a
-- cursor id, sending back ids and statuses only. Every row walked is returned, flagged
-- with whether its status is wanted, so a page full of other statuses still advances.
SELECT id, value->>'status', value->>'status' = ANY(%(statuses)s::text[])
FROM {table}
WHERE project = %(project)s AND environment = %(environment)s AND namespace = %(namespace)s
  AND id > %(after)s
ORDER BY id
LIMIT %(limit)s;

-- name: begin
BEGIN

-- name: commit
COMMIT

-- name: get_many
SELECT namespace, id, record_kind, value, inserted_at, expires_at
FROM {table}
WHERE project = (SELECT %(project)s::text) AND environment = (SELECT %(environment)s::text)
  AND namespace = (SELECT %(namespace)s::text) AND id = ANY(%(ids)s::text[]);

-- name: get_fields
-- get_fields(): a few top-level fields of each row, picked here: the client decodes
-- small objects, not whole values.
SELECT id, (SELECT jsonb_object_agg(f, value -> f) FROM unnest(%(fields)s::text[]) AS f WHERE value ? f)
FROM {table}
WHERE project = (SELECT %(project)s::text) AND environment = (SELECT %(environment)s::text)
  AND namespace = (SELECT %(namespace)s::text) AND id = ANY(%(ids)s::text[]);

-- name: delete_many
DELETE FROM {table}
WHERE project = (SELECT %(project)s::text) AND environment = (SELECT %(environment)s::text)
  AND namespace = (SELECT %(namespace)s::text) AND id = ANY(%(ids)s::text[]);

-- name: lock_row
-- compare_and_set: hold the row until the transaction ends, so the comparison made in
-- Python and the write that follows are atomic. append_log: the partition's offset
-- counter, held so the appends of one partition commit one after another, in order.
SELECT value FROM {table}
WHERE project = %(project)s AND environment = %(environment)s
  AND namespace = %(namespace)s AND id = %(id)s
FOR UPDATE;

-- name: row_exists
SELECT EXISTS (
    SELECT 1 FROM {table}
    WHERE project = %(project)s AND environment = %(environment)s
      AND namespace = %(namespace)s AND id = %(id)s
);

-- name: update_row
UPDATE {table}
SET value = %(value)s::jsonb, record_kind = %(kind)s, expires_at = %(expires_at)s
WHERE project = %(project)s AND environment = %(environment)s
  AND namespace = %(namespace)s AND id = %(id)s;

-- name: prune_expired
DELETE FROM {table}
WHERE project = %(project)s AND environment = %(environment)s
  AND expires_at IS NOT NULL AND expires_at <= %(now)s;

-- name: prune_older_than
-- At most limit rows per call, so retention never holds long locks; ctid = ANY(ARRAY())
-- plans as a TID scan, and SKIP LOCKED leaves rows a writer holds for the next round.
-- No ORDER BY: with no index on inserted_at it would sort the whole namespace on every
-- round, while the scan can stop at the limit (old rows sit early in an append-mostly
-- heap). Retention repeats until a round deletes nothing, so the end state is the same.
DELETE FROM {table}
WHERE ctid = ANY(ARRAY(
    SELECT ctid FROM {table}
    WHERE project = %(project)s AND environment = %(environment)s
      AND namespace = %(namespace)s AND inserted_at < %(cutoff)s
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
));

-- name: count_rows
SELECT count(*) FROM {table}
WHERE project = %(project)s AND environment = %(environment)s

-- name: count_by_namespace
-- The kind is a literal: the partial oqron_jobs_dead_kind_idx (record_kind = 'dlq')
-- serves it, which a parameter would hide from the planner once it goes generic.
SELECT namespace, count(*) FROM {table}
WHERE project = %(project)s AND environment = %(environment)s AND record_kind = {kind}
GROUP BY namespace;

-- name: list_rows
SELECT namespace, id, record_kind, value, inserted_at, expires_at
FROM {table}
WHERE project = %(project)s AND environment = %(environment)s

-- name: started_key_indexed
-- oqron_runs: the indexed expression itself (the index guarantees it casts on every row).
(value->>'startedAt')::float8

-- name: started_key_guarded
-- The other tables have no such index, so a non-numeric startedAt must not be cast. The
-- same float8 as on oqron_runs, so every table lists in the same order.
(CASE WHEN jsonb_typeof(value->'startedAt') = 'number' THEN (value->>'startedAt')::float8 END)

-- name: where_namespace
AND namespace = %(namespace)s

-- name: where_kind
AND record_kind = %(kind)s

-- name: where_status
AND value->>'status' = %(status)s

-- name: where_name
AND value->>'name' = %(name)s

-- name: where_module
AND value->>'module' = %(module)s

-- name: where_correlation
-- Served by the oqron_*_correlation_idx hash indexes (schema.sql): the same expression.
AND value->>'correlationId' = %(correlation)s

-- name: where_started_number
-- Started order and started filters list only rows whose startedAt is a JSON number.
-- IS NOT NULL is indexable, so an index scan skips rows without one. The only other
-- kind of value that survives the float8 cast is a string such as "12", hence the
-- second test; it is spelt with <> rather than = 'number' on purpose: the planner
-- guesses 0.5 percent of rows for an = on an expression it has no statistics for
-- (which made it sort a bitmap scan instead of walking the index) and 99.5 for <>.
AND {started} IS NOT NULL AND jsonb_typeof(value->'startedAt') <> 'string'

-- name: where_started_from
AND {started} >= %(started_from)s

-- name: where_started_to
AND {started} < %(started_to)s

-- name: where_namespace_started_from
-- The window again as a row beside the namespace: a partial index whose predicate is
-- the namespace (oqron_runs_run_started_f8_idx) drops the equality from its conditions,
-- and the range on startedAt, behind the namespace in the index, then bounds nothing
-- (the scan read the index from its start). Implied by the conditions above: no row changes.
AND (namespace, {started}) >= (%(namespace)s, %(started_from)s)

-- name: where_namespace_started_to
AND (namespace, {started}) < (%(namespace)s, %(started_to)s)

-- name: after_started_asc
AND ({started}, id COLLATE "C") > (%(after_key)s, %(after_id)s)

-- name: after_started_desc
AND ({started}, id COLLATE "C") < (%(after_key)s, %(after_id)s)

-- name: after_inserted_asc
AND (inserted_at, id COLLATE "C") > (%(after_key)s, %(after_id)s)

-- name: after_inserted_desc
AND (inserted_at, id COLLATE "C") < (%(after_key)s, %(after_id)s)

-- name: order_started_asc
ORDER BY {started}, id COLLATE "C"

-- name: order_started_desc
ORDER BY {started} DESC, id COLLATE "C" DESC

-- name: order_inserted_asc
ORDER BY inserted_at, id COLLATE "C"

-- name: order_inserted_desc
ORDER BY inserted_at DESC, id COLLATE "C" DESC

-- name: limit_rows
LIMIT %(limit)s

-- name: release_and_delete
-- apply_and_release, postgres mode only (the hot plane's tables live in this same
-- database): the finisher's completed jobs of one queue settled in one transaction
-- instead of three (renew the leases, write the runs and delete the jobs, release the
-- leases), each a round trip that in a busy worker waited milliseconds for the GIL.
-- statements.release_statement puts the hot plane's own ack before this part, as
-- "released" (the leases still held under their token, released), so only the jobs
-- released are deleted, and the run writes after it. A lease lost meanwhile keeps its
-- job, exactly as ack would.
deleted AS (
    DELETE FROM {table}
    WHERE project = (SELECT %(project)s::text) AND environment = (SELECT %(environment)s::text)
      AND namespace = (SELECT %(release_namespace)s::text) AND id = ANY(ARRAY(SELECT job_id FROM released))
)

-- name: read_log
-- A log partition after an offset, by offset (served by oqron_runs_log_offset_idx).
SELECT namespace, id, record_kind, value, inserted_at, expires_at
FROM {table}
WHERE project = %(project)s AND environment = %(environment)s AND namespace = %(namespace)s
  AND record_kind = 'message' AND (value->>'partition')::int = %(partition)s
  AND (value->>'offset')::bigint > %(after)s
ORDER BY (value->>'offset')::bigint
LIMIT %(limit)s;

-- name: claim_commit_async
-- claim_and_read, first of its pipelined statements (one implicit transaction up to the
-- pipeline's sync): the claim writes only hot state, which tolerates loss, so its commit
-- need not wait for a WAL flush (the hot plane's sessions set this for the session).
SELECT set_config('synchronous_commit', 'off', true);

-- name: claim_and_read_rows
-- claim_and_read, postgres mode only (the hot plane's tables live in this same
-- database): statements.claim_read_statement puts the hot plane's own claim before this
-- part, as "claimed", and each claimed job's row is read by its primary key, so a
-- worker's start is one round trip after its wake-up instead of a claim and then a read.
-- A job whose row is gone keeps its lease and comes back without a row (the worker acks it).
-- OFFSET 0 keeps the lateral subquery from being flattened into a join, so each claimed
-- id is a condition of the index scan (the primary key's once the table has statistics);
-- flattened, on a table without statistics yet, it was a join filter over every row of
-- the namespace.
SELECT c.*, r.namespace, r.id, r.record_kind, r.value, r.inserted_at, r.expires_at
FROM claimed AS c
LEFT JOIN LATERAL (
    SELECT namespace, id, record_kind, value, inserted_at, expires_at
    FROM {table}
    WHERE project = (SELECT %(project)s::text) AND environment = (SELECT %(environment)s::text)
      AND namespace = (SELECT %(namespace)s::text) AND id = c.job_id
    OFFSET 0
) AS r ON true

-- OqronKit durable plane on PostgreSQL: the spec's three tables (docs/explanation/storage-model.md).
--
-- Applied as one idempotent script, inside one transaction, by
-- PostgresDurableStore.ensure_schema(); it never drops or rewrites data (only retired
-- indexes). Objects are created unqualified, so they land in the first schema of the
-- connection's search_path. ensure_schema() skips the script when every object named
-- after "IF NOT EXISTS" below already resolves and none named after "DROP INDEX IF
-- EXISTS" does, so keep those phrases on each CREATE and DROP line.
--
-- The run-field indexes are expression indexes: the planner only uses them when a
-- query spells the very same expression, so queries.sql and the board write
-- (value->>'startedAt')::float8 exactly as below. Every index but the TTL ones, the
-- jobId hash and the run id's leads with (project, environment) because every query
-- is scoped to one.
--
-- Why float8 and not the spec's (value->>'startedAt')::numeric: a numeric key is a
-- short varlena in an index tuple, and every comparison of a B-tree descent copied
-- both sides out of it (perf: numeric comparisons were ~9% of a run row's insert);
-- float8 compares in place. It orders every JSON number as numeric does for epoch
-- milliseconds (integers are exact below 2^53), and as the Redis durable store already
-- orders startedAt. The spec's example query ("failed runs, most recent first", which
-- orders by ::numeric) keeps an index of its own below, so a dashboard that copies it
-- still walks an index.
--
-- A consequence worth knowing: because oqron_runs indexes (value->>'startedAt')::float8
-- for every row, a runs-table row whose top-level startedAt is not a JSON number (a
-- string such as "soon", true, an object), or is a number beyond float8's range (past
-- 1e308), is refused by Postgres on write; so is a message row whose top-level
-- publishedAt is not a number.
--
-- Ties on startedAt break on id with COLLATE "C" (byte order, which for UTF-8 is code
-- point order): the same order as the memory and SQLite backends whatever the
-- database's default collation, and keyset pages stay stable. The key columns
-- themselves are COLLATE "C" for the same reason and because it is cheaper: every
-- insert compares them at each level of every index (with the database's default
-- collation, even an equal project goes through the locale machinery). Tables created
-- before that keep the database's collation; nothing reads them differently, since
-- every ordering on these columns spells COLLATE "C" and equality is the same.

-- Concurrent ensure_schema() calls from several processes would otherwise race inside
-- CREATE ... IF NOT EXISTS (it is not atomic and can fail with a duplicate pg_type
-- row); the lock is released when the transaction commits.
SELECT pg_advisory_xact_lock(hashtext('oqronkit:ensure_schema'));

CREATE TABLE IF NOT EXISTS oqron_records (
    project     text   COLLATE "C" NOT NULL,
    environment text   COLLATE "C" NOT NULL,
    namespace   text   COLLATE "C" NOT NULL,
    record_kind text   COLLATE "C" NOT NULL,
    id          text   COLLATE "C" NOT NULL,
    value       jsonb  NOT NULL,
    inserted_at bigint NOT NULL,
    expires_at  bigint NULL,
    PRIMARY KEY (project, environment, namespace, id)
);

CREATE TABLE IF NOT EXISTS oqron_jobs (
    project     text   COLLATE "C" NOT NULL,
    environment text   COLLATE "C" NOT NULL,
    namespace   text   COLLATE "C" NOT NULL,
    record_kind text   COLLATE "C" NOT NULL,
    id          text   COLLATE "C" NOT NULL,
    value       jsonb  NOT NULL,
    inserted_at bigint NOT NULL,
    expires_at  bigint NULL,
    PRIMARY KEY (project, environment, namespace, id)
);

CREATE TABLE IF NOT EXISTS oqron_runs (
    project     text   COLLATE "C" NOT NULL,
    environment text   COLLATE "C" NOT NULL,
    namespace   text   COLLATE "C" NOT NULL,
    record_kind text   COLLATE "C" NOT NULL,
    id          text   COLLATE "C" NOT NULL,
    value       jsonb  NOT NULL,
    inserted_at bigint NOT NULL,
    expires_at  bigint NULL,
    PRIMARY KEY (project, environment, namespace, id)
);

-- Listing and counting by kind (DLQ depth per queue, every definition, ...).
CREATE INDEX IF NOT EXISTS oqron_records_kind_idx ON oqron_records (project, environment, record_kind, namespace);
-- oqron_jobs is listed by kind only for dead letters (DLQ depth per queue), so waiting
-- jobs, the bulk of its inserts, stay out of this index.
CREATE INDEX IF NOT EXISTS oqron_jobs_dead_kind_idx ON oqron_jobs (project, environment, namespace)
    WHERE record_kind = 'dlq';
-- oqron_runs has no kind index: every run row is kind 'run' in namespace 'runs' (the
-- classifier), which the primary key and the startedAt index serve, and retained
-- messages, its one other kind, are listed by namespace and kind by the two message
-- indexes below (each leads with project, environment, namespace).

-- A topic's retained log, partition by partition in offset order (read_log): only
-- message rows, so the runs' write path never maintains it.
CREATE INDEX IF NOT EXISTS oqron_runs_log_offset_idx
    ON oqron_runs (project, environment, namespace, ((value->>'partition')::int), ((value->>'offset')::bigint))
    WHERE record_kind = 'message';

-- TTL pruning only ever looks at rows that have a TTL.
CREATE INDEX IF NOT EXISTS oqron_records_expires_idx ON oqron_records (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS oqron_jobs_expires_idx ON oqron_jobs (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS oqron_runs_expires_idx ON oqron_runs (expires_at) WHERE expires_at IS NOT NULL;

-- Hot run-query fields: filter on status / name / module, newest first by startedAt.
-- Every run row pays for each index it enters (about 4 us of server CPU apiece, with
-- 8 indexes a run row cost 48 us), so status and module leave out their dominant
-- values: completed runs, and runs of queues and workers (nearly every row of a
-- job-heavy app). A filter on one of those walks the startedAt index below instead,
-- inside the board's time window, and nearly every row it meets matches. Filters on the
-- other values (failed, running, cron, ...) stay index range scans. The planner uses a
-- partial index only when it can prove the query's value is not the excluded one: a
-- literal, or a parameter in a custom plan, as Django and psycopg send them.
CREATE INDEX IF NOT EXISTS oqron_runs_other_status_started_f8_idx
    ON oqron_runs (project, environment, (value->>'status'), ((value->>'startedAt')::float8), id COLLATE "C")
    WHERE (value->>'status') <> 'completed';
-- Retained messages (no name, no workerId, another namespace) enter none of the three
-- run indexes below: a message row costs ~25% less server CPU to insert (measured,
-- 40,000 messages). An equality filter proves "IS NOT NULL"; the namespace is a literal.
CREATE INDEX IF NOT EXISTS oqron_runs_run_name_started_f8_idx
    ON oqron_runs (project, environment, (value->>'name'), ((value->>'startedAt')::float8), id COLLATE "C")
    WHERE (value->>'name') IS NOT NULL;
CREATE INDEX IF NOT EXISTS oqron_runs_other_module_started_f8_idx
    ON oqron_runs (project, environment, (value->>'module'), ((value->>'startedAt')::float8), id COLLATE "C")
    WHERE (value->>'module') NOT IN ('queue', 'worker');
-- The spec's example query, verbatim: failed runs newest first by ::numeric. Only the
-- runs that are not completed pay for it (the few, on a healthy system).
CREATE INDEX IF NOT EXISTS oqron_runs_other_status_started_idx
    ON oqron_runs (project, environment, (value->>'status'), ((value->>'startedAt')::numeric), id COLLATE "C")
    WHERE (value->>'status') <> 'completed';
-- What the planner knows of every row's status and module: the partial indexes above
-- describe only the rows they hold. Without this it guesses any status or module rare
-- (0.5% of the rows), and on a small table it then sorted 'completed' runs instead of
-- walking the startedAt index (seen in the board's plan test). ANALYZE builds it
-- (autovacuum, or the leader's table upkeep); no write pays for it. Expression
-- statistics need PostgreSQL 14 or newer.
CREATE STATISTICS IF NOT EXISTS oqron_runs_status_module_stats
    ON (value->>'status'), (value->>'module') FROM oqron_runs;
-- What the planner knows of startedAt: every index on it is partial or has it after the
-- key columns, and Postgres keeps no statistics for either, so "started in the last
-- hour" (the overview) was guessed a third of the table and read it all (a parallel
-- seq scan of 1M runs, ~1 s) instead of the range of oqron_runs_run_started_f8_idx.
-- ANALYZE builds it; no write pays for it.
CREATE STATISTICS IF NOT EXISTS oqron_runs_started_stats ON ((value->>'startedAt')::float8) FROM oqron_runs;
-- Run history of one namespace by startedAt (the board's unfiltered run list).
CREATE INDEX IF NOT EXISTS oqron_runs_run_started_f8_idx
    ON oqron_runs (project, environment, namespace, ((value->>'startedAt')::float8), id COLLATE "C")
    WHERE namespace = 'runs';

-- The retained pub/sub log of one topic, newest first (spec example query 5, verbatim:
-- it names record_kind = 'message', so this partial index serves it, walked backwards,
-- with no sort). Run rows never enter it; only a message row pays for it.
CREATE INDEX IF NOT EXISTS oqron_runs_message_published_idx
    ON oqron_runs (project, environment, namespace, ((value->>'publishedAt')::numeric))
    WHERE record_kind = 'message';

-- A run by id, namespace unknown (spec example query 4: "a specific run"). The primary
-- key leads with the namespace, so that lookup read the whole table. The query names
-- no kind, so no partial index serves it: every row of oqron_runs enters this one, at
-- 3 to 3.5 us of server CPU per row written (6-7% of a run row's write, measured with
-- 50,000 run rows inserted then updated; a hash index measured the same). Keyed on id
-- alone: project and environment are checked on the one row it finds, and with them in
-- the key the index cost ~4.7 us. Run ids are time-ordered (ids.new_id), so a run's
-- insert lands at the B-tree's right edge. The id column's own collation, not COLLATE
-- "C": the spec's "id = '...'" compares in the column's, and on a table created before
-- the key columns were COLLATE "C" an index in another collation would never be used.
CREATE INDEX IF NOT EXISTS oqron_runs_id_idx ON oqron_runs (id);

-- Retired: every enqueue paid for these, and nothing needs them. Jobs of one queue by
-- status are served by oqron_jobs_status_created_idx (same leading columns); counting
-- jobs by kind by the partial oqron_jobs_dead_kind_idx (dead letters are the only kind
-- counted), or by the primary key for one namespace.
DROP INDEX IF EXISTS oqron_jobs_status_idx;
DROP INDEX IF EXISTS oqron_jobs_kind_idx;
-- Replaced by the partial oqron_runs_other_* indexes above (a run row costs ~12 us
-- less to insert). An existing install builds those once, at its next start.
DROP INDEX IF EXISTS oqron_runs_kind_idx;
DROP INDEX IF EXISTS oqron_runs_status_started_idx;
DROP INDEX IF EXISTS oqron_runs_module_started_idx;

-- Replaced by the *_started_f8_idx indexes (float8 keys; see the top of this file): a
-- run row costs ~4 us less to insert. An existing install builds those once, at its
-- next start.
DROP INDEX IF EXISTS oqron_runs_name_started_idx;
DROP INDEX IF EXISTS oqron_runs_other_module_started_idx;
DROP INDEX IF EXISTS oqron_runs_namespace_started_idx;
DROP INDEX IF EXISTS oqron_runs_worker_started_idx;

-- Replaced by the oqron_runs_run_*_started_f8_idx indexes, which message rows do not
-- enter. An existing install builds those once, at its next start.
DROP INDEX IF EXISTS oqron_runs_name_started_f8_idx;
DROP INDEX IF EXISTS oqron_runs_namespace_started_f8_idx;
DROP INDEX IF EXISTS oqron_runs_worker_started_f8_idx;

-- Replaced by the hash index on jobId below (a run row costs ~2.7 us less to insert).
DROP INDEX IF EXISTS oqron_runs_job_started_idx;

-- Only message rows entered it, and oqron_runs_message_published_idx (same leading
-- columns, record_kind = 'message') serves every read it did: a message row costs
-- ~2.5 us of server CPU and ~100 bytes of WAL less to insert.
DROP INDEX IF EXISTS oqron_runs_other_kind_idx;

-- The board's lists (issue 4): every sort they run is served by an index, but one.
-- Runs of one job (its attempts side by side): a hash of jobId, and the handful of
-- rows it finds sorted. Job ids are random, so a B-tree on them took each run row to
-- a random leaf (3.5 us of server CPU per row with startedAt and id in the key, 1.8
-- without); a hash bucket costs 0.8. Rows without a jobId (cron runs) are not in it.
CREATE INDEX IF NOT EXISTS oqron_runs_job_idx ON oqron_runs USING hash ((value->>'jobId'));
-- One correlation id's timeline (oqronkit.trace) in each table: a hash of correlationId
-- (ids are random, so a B-tree would take each row to a random leaf, as jobId did),
-- and the few rows it finds sorted. Partial: a row without one (the bulk of a plain
-- workload) enters none of them, so carrying no id costs no write.
CREATE INDEX IF NOT EXISTS oqron_runs_correlation_idx ON oqron_runs USING hash ((value->>'correlationId'))
    WHERE (value->>'correlationId') IS NOT NULL;
CREATE INDEX IF NOT EXISTS oqron_jobs_correlation_idx ON oqron_jobs USING hash ((value->>'correlationId'))
    WHERE (value->>'correlationId') IS NOT NULL;
CREATE INDEX IF NOT EXISTS oqron_records_correlation_idx ON oqron_records USING hash ((value->>'correlationId'))
    WHERE (value->>'correlationId') IS NOT NULL;
-- A topic's retained log filtered on a message key (the board's topic log, "key"): a hash
-- of the key, as for jobId and correlationId (keys are random, so a B-tree would take
-- each message to a random leaf), and the few messages it finds sorted. The filter read
-- every message of the topic newest first before (50,000: 40 ms). Partial: a message
-- without a key, and every run, enters nothing.
CREATE INDEX IF NOT EXISTS oqron_runs_message_key_idx ON oqron_runs USING hash ((value->>'key'))
    WHERE record_kind = 'message' AND (value->>'key') IS NOT NULL;
-- Runs of one worker, newest first.
CREATE INDEX IF NOT EXISTS oqron_runs_run_worker_started_f8_idx
    ON oqron_runs (project, environment, (value->>'workerId'), ((value->>'startedAt')::float8), id COLLATE "C")
    WHERE (value->>'workerId') IS NOT NULL;
-- Jobs of one queue and status by creation time (jobs page; oldest waiting job). The
-- cast is guarded: unlike runs, job rows are not refused for a non-numeric createdAt.
CREATE INDEX IF NOT EXISTS oqron_jobs_status_created_idx
    ON oqron_jobs (project, environment, namespace, (value->>'status'),
                   (CASE WHEN jsonb_typeof(value->'createdAt') = 'number' THEN (value->>'createdAt')::numeric END),
                   id COLLATE "C");
-- Dead letters by death time: of one queue, of every queue, and of one error
-- fingerprint (the groups); partial, so live jobs never pay for them.
CREATE INDEX IF NOT EXISTS oqron_jobs_dlq_died_idx
    ON oqron_jobs (project, environment, namespace,
                   (CASE WHEN jsonb_typeof(value->'diedAt') = 'number' THEN (value->>'diedAt')::numeric END),
                   id COLLATE "C")
    WHERE record_kind = 'dlq';
CREATE INDEX IF NOT EXISTS oqron_jobs_dlq_all_died_idx
    ON oqron_jobs (project, environment,
                   (CASE WHEN jsonb_typeof(value->'diedAt') = 'number' THEN (value->>'diedAt')::numeric END),
                   id COLLATE "C")
    WHERE record_kind = 'dlq';
CREATE INDEX IF NOT EXISTS oqron_jobs_dlq_fingerprint_idx
    ON oqron_jobs (project, environment, (value->>'errorFingerprint'),
                   (CASE WHEN jsonb_typeof(value->'diedAt') = 'number' THEN (value->>'diedAt')::numeric END),
                   id COLLATE "C")
    WHERE record_kind = 'dlq';

-- OqronKit durable plane on SQLite: the spec's three tables (docs/explanation/storage-model.md).
--
-- Applied as one idempotent script by SQLiteDurableStore.ensure_schema(); it never
-- drops or rewrites data. `value` is JSON text (jsonb on Postgres), written only by
-- the engine in its compact canonical form.
--
-- The run-field indexes are expression indexes: SQLite only uses them when a query
-- spells the very same expression, so queries.sql writes json_extract(value, '$.field')
-- exactly as below. Every index leads with (project, environment) because every query
-- is scoped to one of them. One IMMEDIATE transaction, so several processes starting at
-- once create the schema one after another, each all or nothing.

BEGIN IMMEDIATE;

CREATE TABLE IF NOT EXISTS oqron_records (
    project     TEXT    NOT NULL,
    environment TEXT    NOT NULL,
    namespace   TEXT    NOT NULL,
    record_kind TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    inserted_at INTEGER NOT NULL,
    expires_at  INTEGER NULL,
    PRIMARY KEY (project, environment, namespace, id)
);

CREATE TABLE IF NOT EXISTS oqron_jobs (
    project     TEXT    NOT NULL,
    environment TEXT    NOT NULL,
    namespace   TEXT    NOT NULL,
    record_kind TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    inserted_at INTEGER NOT NULL,
    expires_at  INTEGER NULL,
    PRIMARY KEY (project, environment, namespace, id)
);

CREATE TABLE IF NOT EXISTS oqron_runs (
    project     TEXT    NOT NULL,
    environment TEXT    NOT NULL,
    namespace   TEXT    NOT NULL,
    record_kind TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    inserted_at INTEGER NOT NULL,
    expires_at  INTEGER NULL,
    PRIMARY KEY (project, environment, namespace, id)
);

-- Listing and counting by kind (e.g. DLQ depth per queue, every definition).
CREATE INDEX IF NOT EXISTS oqron_records_kind_idx ON oqron_records (project, environment, record_kind, namespace);
CREATE INDEX IF NOT EXISTS oqron_jobs_kind_idx ON oqron_jobs (project, environment, record_kind, namespace);
CREATE INDEX IF NOT EXISTS oqron_runs_kind_idx ON oqron_runs (project, environment, record_kind, namespace);

-- TTL pruning; partial because most rows never expire.
CREATE INDEX IF NOT EXISTS oqron_records_expires_idx ON oqron_records (project, environment, expires_at)
    WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS oqron_jobs_expires_idx ON oqron_jobs (project, environment, expires_at)
    WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS oqron_runs_expires_idx ON oqron_runs (project, environment, expires_at)
    WHERE expires_at IS NOT NULL;

-- The hot run fields: filter on one of status/name/module and read newest first
-- without a sort; (startedAt, id) is also the keyset cursor.
CREATE INDEX IF NOT EXISTS oqron_runs_status_idx ON oqron_runs
    (project, environment, json_extract(value, '$.status'), json_extract(value, '$.startedAt'), id);
CREATE INDEX IF NOT EXISTS oqron_runs_name_idx ON oqron_runs
    (project, environment, json_extract(value, '$.name'), json_extract(value, '$.startedAt'), id);
CREATE INDEX IF NOT EXISTS oqron_runs_module_idx ON oqron_runs
    (project, environment, json_extract(value, '$.module'), json_extract(value, '$.startedAt'), id);
CREATE INDEX IF NOT EXISTS oqron_runs_started_idx ON oqron_runs
    (project, environment, namespace, json_extract(value, '$.startedAt'), id);

-- The board's lists (issue 4): every sort it runs is served by one of these.
-- Runs of one job (a job's attempts side by side) and of one worker, newest first.
CREATE INDEX IF NOT EXISTS oqron_runs_job_idx ON oqron_runs
    (project, environment, json_extract(value, '$.jobId'), json_extract(value, '$.startedAt'), id);
CREATE INDEX IF NOT EXISTS oqron_runs_worker_idx ON oqron_runs
    (project, environment, json_extract(value, '$.workerId'), json_extract(value, '$.startedAt'), id);

-- One correlation id's timeline (oqronkit.trace) in every table, in insert order.
-- Partial: a row without a correlationId (the bulk of them) enters none of them.
CREATE INDEX IF NOT EXISTS oqron_runs_correlation_idx ON oqron_runs
    (project, environment, json_extract(value, '$.correlationId'), inserted_at, id)
    WHERE json_extract(value, '$.correlationId') IS NOT NULL;
CREATE INDEX IF NOT EXISTS oqron_jobs_correlation_idx ON oqron_jobs
    (project, environment, json_extract(value, '$.correlationId'), inserted_at, id)
    WHERE json_extract(value, '$.correlationId') IS NOT NULL;
CREATE INDEX IF NOT EXISTS oqron_records_correlation_idx ON oqron_records
    (project, environment, json_extract(value, '$.correlationId'), inserted_at, id)
    WHERE json_extract(value, '$.correlationId') IS NOT NULL;
-- Jobs of one queue and status by creation time (jobs page; oldest waiting job).
CREATE INDEX IF NOT EXISTS oqron_jobs_status_created_idx ON oqron_jobs
    (project, environment, namespace, json_extract(value, '$.status'), json_extract(value, '$.createdAt'), id);
-- Dead letters by death time: of one queue, of every queue, and of one error
-- fingerprint (the groups); partial, so live jobs never pay for them. Queries spell
-- record_kind = 'dlq' as a literal: SQLite ignores a partial index for a bound value.
CREATE INDEX IF NOT EXISTS oqron_jobs_dlq_died_idx ON oqron_jobs
    (project, environment, namespace, json_extract(value, '$.diedAt'), id) WHERE record_kind = 'dlq';
CREATE INDEX IF NOT EXISTS oqron_jobs_dlq_all_died_idx ON oqron_jobs
    (project, environment, json_extract(value, '$.diedAt'), id) WHERE record_kind = 'dlq';
CREATE INDEX IF NOT EXISTS oqron_jobs_dlq_fingerprint_idx ON oqron_jobs
    (project, environment, json_extract(value, '$.errorFingerprint'), json_extract(value, '$.diedAt'), id)
    WHERE record_kind = 'dlq';

COMMIT;

-- A topic's retained log, partition by partition in offset order (read_log): only
-- message rows, so the runs' write path never maintains it.
CREATE INDEX IF NOT EXISTS oqron_runs_log_offset_idx
    ON oqron_runs (project, environment, namespace, json_extract(value, '$.partition'), json_extract(value, '$.offset'))
    WHERE record_kind = 'message';

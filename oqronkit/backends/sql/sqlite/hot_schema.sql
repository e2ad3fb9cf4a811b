-- OqronKit hot plane on SQLite: claim structures, leases, locks, counters, ephemeral keys.
--
-- Lives in the same file as the durable tables (schema.sql) and is applied as one
-- idempotent script by SQLiteHotPlane.ensure_ready(). Everything here may be lost and
-- rebuilt from the durable plane (the reconciler re-signals every waiting job), so
-- nothing outside this file depends on these tables. Every key leads with
-- (project, environment) because every call is scoped to one of them. One IMMEDIATE
-- transaction, so processes starting at once create the tables one after another.

BEGIN IMMEDIATE;

-- Ready (run_at IS NULL) and delayed (run_at = due time, epoch ms) job ids. A ready
-- row is claimed in (priority DESC, ord) order; ord is +seq for FIFO and -seq for LIFO,
-- seq coming from oqron_hot_seq. A delayed row gets its ord when it is promoted, so
-- lifo is kept to compute it then.
CREATE TABLE IF NOT EXISTS oqron_hot_jobs (
    project     TEXT    NOT NULL,
    environment TEXT    NOT NULL,
    queue       TEXT    NOT NULL,
    job_id      TEXT    NOT NULL,
    priority    INTEGER NOT NULL,
    lifo        INTEGER NOT NULL,
    ord         INTEGER NOT NULL,
    run_at      INTEGER NULL,
    PRIMARY KEY (project, environment, queue, job_id)
) WITHOUT ROWID;

-- The claim order, without a sort: queries spell `run_at IS NULL` so SQLite picks it.
CREATE INDEX IF NOT EXISTS oqron_hot_jobs_ready_idx
    ON oqron_hot_jobs (project, environment, queue, priority DESC, ord) WHERE run_at IS NULL;
-- The due-time set: promotion, next_due and depths seek by run_at.
CREATE INDEX IF NOT EXISTS oqron_hot_jobs_due_idx
    ON oqron_hot_jobs (project, environment, queue, run_at) WHERE run_at IS NOT NULL;

-- Held leases: only the holder of token may extend, ack or release the job.
CREATE TABLE IF NOT EXISTS oqron_hot_leases (
    project     TEXT    NOT NULL,
    environment TEXT    NOT NULL,
    queue       TEXT    NOT NULL,
    job_id      TEXT    NOT NULL,
    token       INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    worker      TEXT    NOT NULL,
    PRIMARY KEY (project, environment, queue, job_id)
) WITHOUT ROWID;

-- The rescuer's scan for lapsed leases.
CREATE INDEX IF NOT EXISTS oqron_hot_leases_expiry_idx
    ON oqron_hot_leases (project, environment, queue, expires_at);

-- Per-queue sequences: seq orders ready jobs, token fences leases (strictly increasing).
CREATE TABLE IF NOT EXISTS oqron_hot_seq (
    project     TEXT    NOT NULL,
    environment TEXT    NOT NULL,
    queue       TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    token       INTEGER NOT NULL,
    PRIMARY KEY (project, environment, queue)
) WITHOUT ROWID;

-- Locks and leader election: a lock is free once expires_at <= now.
CREATE TABLE IF NOT EXISTS oqron_hot_locks (
    project     TEXT    NOT NULL,
    environment TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    owner       TEXT    NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (project, environment, name)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS oqron_hot_counters (
    project     TEXT    NOT NULL,
    environment TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    value       INTEGER NOT NULL,
    PRIMARY KEY (project, environment, name)
) WITHOUT ROWID;

-- Ephemeral keys (live run overlay, worker heartbeats): a key is gone once
-- expires_at <= now; expired rows are pruned by the next write to their group.
CREATE TABLE IF NOT EXISTS oqron_hot_kv (
    project     TEXT    NOT NULL,
    environment TEXT    NOT NULL,
    grp         TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (project, environment, grp, key)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS oqron_hot_kv_expiry_idx
    ON oqron_hot_kv (project, environment, grp, expires_at);

-- Rate limiters' state of one key (JSON: backends/sqlite_rates.py), gone once
-- expires_at <= now; pruned every few thousand checks of a process (sqlite_hot.py).
CREATE TABLE IF NOT EXISTS oqron_hot_rates (
    project     TEXT    NOT NULL,
    environment TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (project, environment, name, key)
) WITHOUT ROWID;

-- Cluster-wide queue limits (backends/claim_limits.py): per queue, the JSON log of claim
-- times inside the rate window and the per-minute held-back counts, rewritten by each
-- limited claim inside its write transaction.
CREATE TABLE IF NOT EXISTS oqron_hot_qlimits (
    project     TEXT NOT NULL,
    environment TEXT NOT NULL,
    queue       TEXT NOT NULL,
    state       TEXT NOT NULL,
    PRIMARY KEY (project, environment, queue)
) WITHOUT ROWID;

COMMIT;

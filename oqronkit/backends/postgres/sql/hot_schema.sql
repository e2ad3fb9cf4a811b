-- OqronKit hot plane on PostgreSQL (the postgres mode: teams without Redis).
--
-- Applied as one idempotent script, inside one transaction, by
-- PostgresHotPlane.ensure_ready(); ensure_ready() skips it when every object named
-- after "IF NOT EXISTS" below already resolves, so keep that phrase on each CREATE line.
--
-- Every table is UNLOGGED: no WAL and no fsync per claim or ack. After a server crash
-- Postgres empties them; the engine's reconciler rebuilds the broker from the durable
-- plane, and extend() re-creates the leases of workers still running. The sequences
-- stay logged, so fencing tokens keep increasing across such a crash and a zombie's
-- old token can never match a new lease.
--
-- Text key columns are COLLATE "C" (byte order): every claim, ack and renewal compares
-- them in the primary key and the partial indexes, and with the database's default
-- collation even equal values go through the locale machinery. Tables created before
-- that keep the database's collation and behave the same (equality is the same, and
-- the only ordering on them, job_id, just has to be one order).
--
-- One row per job in oqron_hot_jobs, whatever its state, so a single primary key makes
-- signal, claim, ack and extend atomic against each other:
--   ready    token IS NULL AND run_at IS NULL
--   delayed  token IS NULL AND run_at IS NOT NULL (due once run_at is at or before now)
--   leased   token IS NOT NULL (held until expires_at by worker)
-- Ready jobs run highest priority first, then by ord: FIFO jobs take +n and LIFO jobs
-- -n from oqron_hot_ord_seq, so one ascending sort serves both.

SELECT pg_advisory_xact_lock(hashtext('oqronkit:ensure_hot'));

CREATE SEQUENCE IF NOT EXISTS oqron_hot_token_seq;
CREATE SEQUENCE IF NOT EXISTS oqron_hot_ord_seq;

CREATE UNLOGGED TABLE IF NOT EXISTS oqron_hot_jobs (
    project     text    COLLATE "C" NOT NULL,
    environment text    COLLATE "C" NOT NULL,
    queue       text    COLLATE "C" NOT NULL,
    job_id      text    COLLATE "C" NOT NULL,
    priority    integer NOT NULL,
    ord         bigint  NOT NULL,
    lifo        boolean NOT NULL,
    run_at      bigint  NULL,
    token       bigint  NULL,
    expires_at  bigint  NULL,
    worker      text    NULL,
    PRIMARY KEY (project, environment, queue, job_id)
);

-- claim: the next ready jobs in order, read straight off the index under LIMIT.
CREATE INDEX IF NOT EXISTS oqron_hot_jobs_ready_idx
    ON oqron_hot_jobs (project, environment, queue, priority DESC, ord)
    WHERE token IS NULL AND run_at IS NULL;
-- claim (promotion of due jobs) and next_due.
CREATE INDEX IF NOT EXISTS oqron_hot_jobs_due_idx
    ON oqron_hot_jobs (project, environment, queue, run_at)
    WHERE token IS NULL AND run_at IS NOT NULL;
-- take_expired: the leases that lapsed first.
CREATE INDEX IF NOT EXISTS oqron_hot_jobs_lease_idx
    ON oqron_hot_jobs (project, environment, queue, expires_at)
    WHERE token IS NOT NULL;

CREATE UNLOGGED TABLE IF NOT EXISTS oqron_hot_locks (
    project     text   COLLATE "C" NOT NULL,
    environment text   COLLATE "C" NOT NULL,
    name        text   COLLATE "C" NOT NULL,
    owner       text   NOT NULL,
    expires_at  bigint NOT NULL,
    PRIMARY KEY (project, environment, name)
);

CREATE UNLOGGED TABLE IF NOT EXISTS oqron_hot_counters (
    project     text   COLLATE "C" NOT NULL,
    environment text   COLLATE "C" NOT NULL,
    name        text   COLLATE "C" NOT NULL,
    value       bigint NOT NULL,
    PRIMARY KEY (project, environment, name)
);

CREATE UNLOGGED TABLE IF NOT EXISTS oqron_hot_kv (
    project     text   COLLATE "C" NOT NULL,
    environment text   COLLATE "C" NOT NULL,
    grp         text   COLLATE "C" NOT NULL,
    key         text   COLLATE "C" NOT NULL,
    value       text   NOT NULL,
    expires_at  bigint NOT NULL,
    PRIMARY KEY (project, environment, grp, key)
);

-- OqronKit hot plane on SQLite: every statement SQLiteHotPlane runs (tables in hot_schema.sql).
--
-- Values are always parameters. Numbered parameters (?1, ?2, ...) let a statement use
-- one value twice; ?1, ?2, ?3 are (project, environment, queue) wherever a queue is
-- involved. A list of ids, or of [job_id, token] pairs, is one JSON array parameter
-- read with json_each, so a batch of any size is one statement.
--
-- Queries on ready rows spell `run_at IS NULL` and those on delayed rows
-- `run_at IS NOT NULL`: SQLite uses a partial index only when the WHERE clause implies
-- the index's own condition. INDEXED BY pins the partial ready index where the planner,
-- without statistics, would walk every row of the queue (ready and delayed) instead.

-- name: data_version
-- Changes whenever another connection (thread or process) commits: wait()'s cheap poll.
PRAGMA data_version;

-- name: bump_seq
-- Reserve ?4 enqueue sequence numbers; returns the last one reserved.
INSERT INTO oqron_hot_seq (project, environment, queue, seq, token) VALUES (?1, ?2, ?3, ?4, 0)
ON CONFLICT (project, environment, queue) DO UPDATE SET seq = oqron_hot_seq.seq + excluded.seq
RETURNING seq;

-- name: bump_token
-- Reserve ?4 fencing tokens; returns the last one reserved.
INSERT INTO oqron_hot_seq (project, environment, queue, seq, token) VALUES (?1, ?2, ?3, 0, ?4)
ON CONFLICT (project, environment, queue) DO UPDATE SET token = oqron_hot_seq.token + excluded.token
RETURNING token;

-- name: raise_token
-- Never hand out a token at or below ?4 again (a lease re-created by extend holds it).
INSERT INTO oqron_hot_seq (project, environment, queue, seq, token) VALUES (?1, ?2, ?3, 0, ?4)
ON CONFLICT (project, environment, queue) DO UPDATE SET token = max(oqron_hot_seq.token, excluded.token);

-- name: insert_signal
-- Make a job id ready (run_at NULL) or delayed, unless it is already ready, delayed or
-- leased in this queue. `WHERE` is required before ON CONFLICT after a SELECT.
INSERT INTO oqron_hot_jobs (project, environment, queue, job_id, priority, lifo, ord, run_at)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
WHERE NOT EXISTS (
    SELECT 1 FROM oqron_hot_leases
    WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND job_id = ?4
)
ON CONFLICT (project, environment, queue, job_id) DO NOTHING;

-- name: place
-- Put a released job back as ready or delayed, replacing any stale entry.
INSERT INTO oqron_hot_jobs (project, environment, queue, job_id, priority, lifo, ord, run_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
ON CONFLICT (project, environment, queue, job_id) DO UPDATE SET
    priority = excluded.priority, lifo = excluded.lifo, ord = excluded.ord, run_at = excluded.run_at;

-- name: any_claimable
-- The read-only fast path of claim: idle pollers never take the write lock.
SELECT EXISTS (
    SELECT 1 FROM oqron_hot_jobs INDEXED BY oqron_hot_jobs_ready_idx
    WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND run_at IS NULL
) OR EXISTS (
    SELECT 1 FROM oqron_hot_jobs
    WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND run_at IS NOT NULL AND run_at <= ?4
);

-- name: due_jobs
-- Delayed jobs due at ?4, in the order they become ready (the memory plane's heap order).
SELECT job_id, lifo FROM oqron_hot_jobs
WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND run_at IS NOT NULL AND run_at <= ?4
ORDER BY run_at, job_id;

-- name: delayed_lifo
-- The lifo flag of one delayed job (no row: the job is not delayed).
SELECT lifo FROM oqron_hot_jobs
WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND job_id = ?4 AND run_at IS NOT NULL;

-- name: make_ready
-- Promote one delayed job with its fresh ordering key ?5.
UPDATE oqron_hot_jobs SET run_at = NULL, ord = ?5
WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND job_id = ?4;

-- name: take_ready
-- Remove the first ?4 ready jobs in claim order. RETURNING yields rows in no promised
-- order, so priority and ord come back for the caller to sort.
DELETE FROM oqron_hot_jobs
WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND job_id IN (
    SELECT job_id FROM oqron_hot_jobs
    WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND run_at IS NULL
    ORDER BY priority DESC, ord
    LIMIT ?4
)
RETURNING job_id, priority, ord;

-- name: remove_waiting
-- Remove ids (a JSON array) from ready and delayed; leases are untouched.
DELETE FROM oqron_hot_jobs
WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND job_id IN (SELECT value FROM json_each(?4))
RETURNING job_id;

-- name: present
-- The ids among a JSON array that are ready, delayed or leased.
SELECT job_id FROM oqron_hot_jobs
WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND job_id IN (SELECT value FROM json_each(?4))
UNION
SELECT job_id FROM oqron_hot_leases
WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND job_id IN (SELECT value FROM json_each(?4));

-- name: sample_entries
-- sample(): up to ?4 of the queue's ready and delayed job ids, a walk of the primary key.
SELECT job_id FROM oqron_hot_jobs
WHERE project = ?1 AND environment = ?2 AND queue = ?3
ORDER BY job_id
LIMIT ?4;

-- name: sample_leases
-- sample(): the ?4 leases that lapse first, read off the expiry index.
SELECT job_id, token, expires_at FROM oqron_hot_leases
WHERE project = ?1 AND environment = ?2 AND queue = ?3
ORDER BY expires_at, job_id
LIMIT ?4;

-- name: depths
-- Ready, due-but-not-promoted, not-yet-due and leased counts at ?4.
SELECT
    (SELECT count(*) FROM oqron_hot_jobs INDEXED BY oqron_hot_jobs_ready_idx
     WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND run_at IS NULL),
    (SELECT count(*) FROM oqron_hot_jobs
     WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND run_at IS NOT NULL AND run_at <= ?4),
    (SELECT count(*) FROM oqron_hot_jobs
     WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND run_at IS NOT NULL AND run_at > ?4),
    (SELECT count(*) FROM oqron_hot_leases
     WHERE project = ?1 AND environment = ?2 AND queue = ?3);

-- name: next_due
SELECT min(run_at) FROM oqron_hot_jobs
WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND run_at IS NOT NULL;

-- name: wait_state
-- For the queues in a JSON array: whether any has a ready job, and the earliest due
-- time among them. Correlated per queue so each probe is one index seek.
SELECT
    max(EXISTS (
        SELECT 1 FROM oqron_hot_jobs AS j INDEXED BY oqron_hot_jobs_ready_idx
        WHERE j.project = ?1 AND j.environment = ?2 AND j.queue = q.value AND j.run_at IS NULL
    )),
    min((
        SELECT min(j.run_at) FROM oqron_hot_jobs AS j
        WHERE j.project = ?1 AND j.environment = ?2 AND j.queue = q.value AND j.run_at IS NOT NULL
    ))
FROM json_each(?3) AS q;

-- name: insert_lease
INSERT INTO oqron_hot_leases (project, environment, queue, job_id, token, expires_at, worker)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT (project, environment, queue, job_id) DO UPDATE SET
    token = excluded.token, expires_at = excluded.expires_at, worker = excluded.worker;

-- name: renew_leases
-- Move the expiry of held leases (a JSON array of [job_id, token]) to ?4.
UPDATE oqron_hot_leases SET expires_at = ?4
WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND (job_id, token) IN (
    SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?5)
)
RETURNING job_id, token;

-- name: ack_leases
-- Drop held leases (a JSON array of [job_id, token]) whose token still matches.
DELETE FROM oqron_hot_leases
WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND (job_id, token) IN (
    SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?4)
)
RETURNING job_id;

-- name: drop_lease
DELETE FROM oqron_hot_leases
WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND job_id = ?4 AND token = ?5;

-- name: take_expired
-- Remove up to ?5 leases expired at ?4, oldest first; RETURNING order is not promised.
DELETE FROM oqron_hot_leases
WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND job_id IN (
    SELECT job_id FROM oqron_hot_leases
    WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND expires_at <= ?4
    ORDER BY expires_at, job_id
    LIMIT ?5
)
RETURNING job_id, token, expires_at, worker;

-- name: leases_of
-- The leases of a queue held by worker ?4, expired or not.
SELECT job_id, token, expires_at FROM oqron_hot_leases
WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND worker = ?4
ORDER BY token;

-- name: acquire_lock
-- Take the lock if free or lapsed at ?6, or renew it for its owner. RETURNING yields a
-- row only when the insert or the update happened.
INSERT INTO oqron_hot_locks (project, environment, name, owner, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (project, environment, name) DO UPDATE SET
    owner = excluded.owner, expires_at = excluded.expires_at
WHERE oqron_hot_locks.owner = excluded.owner OR oqron_hot_locks.expires_at <= ?6
RETURNING owner;

-- name: release_lock
DELETE FROM oqron_hot_locks WHERE project = ?1 AND environment = ?2 AND name = ?3 AND owner = ?4;

-- name: lock_owner
SELECT owner FROM oqron_hot_locks
WHERE project = ?1 AND environment = ?2 AND name = ?3 AND expires_at > ?4;

-- name: incr
INSERT INTO oqron_hot_counters (project, environment, name, value) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (project, environment, name) DO UPDATE SET value = oqron_hot_counters.value + excluded.value
RETURNING value;

-- name: get_counters
-- Existing counters among a JSON array of names.
SELECT name, value FROM oqron_hot_counters
WHERE project = ?1 AND environment = ?2 AND name IN (SELECT value FROM json_each(?3));

-- name: kv_prune
-- Expired keys of one group, dropped by the next write to it (and by kv_prune).
DELETE FROM oqron_hot_kv WHERE project = ?1 AND environment = ?2 AND grp = ?3 AND expires_at <= ?4;

-- name: kv_set
INSERT INTO oqron_hot_kv (project, environment, grp, key, value, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT (project, environment, grp, key) DO UPDATE SET
    value = excluded.value, expires_at = excluded.expires_at;

-- name: kv_get
SELECT key, value FROM oqron_hot_kv
WHERE project = ?1 AND environment = ?2 AND grp = ?3 AND key IN (SELECT value FROM json_each(?4))
  AND expires_at > ?5;

-- name: kv_all
SELECT key, value FROM oqron_hot_kv
WHERE project = ?1 AND environment = ?2 AND grp = ?3 AND expires_at > ?4;

-- name: kv_delete
DELETE FROM oqron_hot_kv
WHERE project = ?1 AND environment = ?2 AND grp = ?3 AND key IN (SELECT value FROM json_each(?4));

-- name: rate_hit
-- One check of one key: oqron_rate_step (backends/sqlite_rates.py) turns the stored state
-- into the new one with the answer inside; an expired state counts as none.
INSERT INTO oqron_hot_rates (project, environment, name, key, state, expires_at)
VALUES (?1, ?2, ?3, ?4, oqron_rate_step(NULL, ?5, ?6), ?6 + ?7)
ON CONFLICT (project, environment, name, key) DO UPDATE SET
    state = oqron_rate_step(CASE WHEN expires_at > ?6 THEN state END, ?5, ?6),
    expires_at = CASE WHEN expires_at > ?6 + ?7 THEN expires_at ELSE ?6 + ?7 END
RETURNING state;

-- name: rate_read
SELECT state, expires_at FROM oqron_hot_rates WHERE project = ?1 AND environment = ?2 AND name = ?3 AND key = ?4;

-- name: rate_write
INSERT INTO oqron_hot_rates (project, environment, name, key, state, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT (project, environment, name, key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at;

-- name: rate_prune
DELETE FROM oqron_hot_rates WHERE expires_at <= ?1;

-- name: qlimit_read
SELECT state FROM oqron_hot_qlimits WHERE project = ?1 AND environment = ?2 AND queue = ?3;

-- name: qlimit_write
INSERT INTO oqron_hot_qlimits (project, environment, queue, state) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (project, environment, queue) DO UPDATE SET state = excluded.state;

-- name: live_leases
-- A queue's leases still live at ?4 (its global concurrency in use).
SELECT count(*) FROM oqron_hot_leases INDEXED BY oqron_hot_leases_expiry_idx
WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND expires_at > ?4;

-- name: any_ready
SELECT EXISTS (
    SELECT 1 FROM oqron_hot_jobs INDEXED BY oqron_hot_jobs_ready_idx
    WHERE project = ?1 AND environment = ?2 AND queue = ?3 AND run_at IS NULL
);

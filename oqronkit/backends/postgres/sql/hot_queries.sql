-- Named queries of the PostgreSQL hot plane (loaded by oqronkit.backends.sqlfiles).
--
-- Every value is a bound parameter; batches travel as parallel arrays unnested
-- server-side, so a batch of any size is one statement and one round trip. Times are
-- the caller's epoch milliseconds, never the database clock. Statements that make a
-- job claimable end with pg_notify on the queue's channel, in the same statement, so
-- the wake-up is sent exactly when the change commits.
--
-- Note: psycopg scans the whole text for placeholders, comments included, so comments
-- here never contain a percent sign.
--
-- Batch lookups by key (= ANY) pass the key's leading values as (SELECT value), as the
-- durable store's queries.sql explains: so the planner never answers them by walking a
-- whole queue it wrongly believes to hold one row.

-- name: missing_objects
-- Which of the given relation and function names do not resolve on the search_path.
SELECT name FROM unnest(%(names)s::text[]) AS t(name) WHERE to_regclass(name) IS NULL AND to_regproc(name) IS NULL;

-- name: session_setup
-- Hot state tolerates loss, so commits need not wait for the WAL flush.
SET synchronous_commit = off;

-- name: signal
-- First occurrence of an id wins; ords are drawn in input order, rows are inserted in
-- id order so concurrent overlapping batches lock keys in the same order. An id
-- already present in any state (ready, delayed, leased) is left alone.
WITH input AS (
    SELECT DISTINCT ON (s.job_id) s.job_id, s.priority, s.run_at, s.lifo, s.i
    FROM unnest(%(ids)s::text[], %(priorities)s::integer[], %(run_ats)s::bigint[], %(lifos)s::boolean[])
         WITH ORDINALITY AS s(job_id, priority, run_at, lifo, i)
    ORDER BY s.job_id, s.i
), numbered AS (
    SELECT job_id, priority, run_at, lifo, nextval('oqron_hot_ord_seq') AS n
    FROM input
    ORDER BY i
), inserted AS (
    INSERT INTO oqron_hot_jobs (project, environment, queue, job_id, priority, ord, lifo, run_at)
    SELECT %(project)s, %(environment)s, %(queue)s, job_id, priority,
           CASE WHEN lifo THEN -n ELSE n END, lifo,
           CASE WHEN run_at > %(now)s THEN run_at END
    FROM numbered
    ORDER BY job_id
    ON CONFLICT DO NOTHING
    RETURNING priority, ord, run_at
), lowered AS (
    -- the queue's floor goes below the first job made ready (schema: oqron_hot_heads)
    SELECT oqron_heads_lower_v1(%(project)s, %(environment)s, %(queue)s, m.rank, m.ord) AS moved
    FROM (SELECT -(priority::bigint) AS rank, ord FROM inserted WHERE run_at IS NULL ORDER BY 1, 2 LIMIT 1) AS m
)
SELECT pg_notify(%(channel)s, '') FROM (SELECT 1 FROM inserted LIMIT 1) AS changed, (SELECT count(*) FROM lowered) AS l;

-- name: promote_due
-- First half of claim: due delayed jobs become ready behind the jobs already ready,
-- in run_at order. SKIP LOCKED: rows another claimer is promoting are its business.
--
-- Here, in claim and in take_expired, the locked rows are written back by ctid: a TID
-- scan is the one plan the planner can choose, even before the table has statistics
-- (by key, a fresh table's estimates make a scan of the whole queue look as cheap as
-- a lookup). The lock taken in the same statement keeps each ctid valid.
WITH due AS (
    SELECT ctid AS row_id, lifo
    FROM oqron_hot_jobs
    WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
      AND token IS NULL AND run_at <= %(now)s
    ORDER BY run_at, job_id
    FOR UPDATE SKIP LOCKED
), numbered AS (
    SELECT row_id, lifo, nextval('oqron_hot_ord_seq') AS n FROM due
), promoted AS (
    UPDATE oqron_hot_jobs AS j
    SET run_at = NULL, ord = CASE WHEN numbered.lifo THEN -numbered.n ELSE numbered.n END
    FROM numbered
    WHERE j.ctid = ANY(ARRAY(SELECT row_id FROM numbered)) AND j.ctid = numbered.row_id
    RETURNING j.priority, j.ord, j.run_at
), lowered AS (
    -- the queue's floor goes below the first job made ready (schema: oqron_hot_heads)
    SELECT oqron_heads_lower_v1(%(project)s, %(environment)s, %(queue)s, m.rank, m.ord) AS moved
    FROM (SELECT -(priority::bigint) AS rank, ord FROM promoted WHERE run_at IS NULL ORDER BY 1, 2 LIMIT 1) AS m
)
SELECT (SELECT count(*) FROM promoted), (SELECT count(*) FROM lowered);

-- name: claim
-- Second half of claim: lease the next ready jobs. SKIP LOCKED keeps concurrent
-- claimers disjoint without waiting on each other; tokens are drawn in claim order.
-- Read from the queue's floor; the rows' ranks, ords and the floor go back to
-- heads.py, which decides whether to raise the floor.
WITH floor AS (
    SELECT coalesce(max(lo_rank), -9223372036854775807) AS rank, coalesce(max(lo_ord), -9223372036854775807) AS ord
    FROM oqron_hot_heads
    WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
), picked AS (
    SELECT ctid AS row_id
    FROM oqron_hot_jobs
    WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
      AND token IS NULL AND run_at IS NULL
      AND (-(priority::bigint), ord) >= ((SELECT rank FROM floor), (SELECT ord FROM floor))
    ORDER BY -(priority::bigint), ord
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), numbered AS (
    SELECT row_id, nextval('oqron_hot_token_seq') AS token FROM picked
)
UPDATE oqron_hot_jobs AS j
SET token = numbered.token, expires_at = %(expires_at)s, worker = %(worker)s
FROM numbered
WHERE j.ctid = ANY(ARRAY(SELECT row_id FROM numbered)) AND j.ctid = numbered.row_id
RETURNING j.job_id, j.token, j.expires_at, -(j.priority::bigint), j.ord,
          (SELECT rank FROM floor), (SELECT ord FROM floor);

-- name: extend
-- Renew leases held with their token; an id absent in every state (the plane lost
-- it) is re-created as a lease for the same token; a row in any other state or held
-- under another token is left alone and not returned. The last column says which rows were
-- re-created (an inserted row has no xmax), whose tokens raise_token then retires.
INSERT INTO oqron_hot_jobs AS j
    (project, environment, queue, job_id, priority, ord, lifo, run_at, token, expires_at, worker)
SELECT %(project)s, %(environment)s, %(queue)s, l.job_id, 0, 0, false, NULL, l.token, %(expires_at)s, ''
FROM (
    SELECT DISTINCT ON (s.job_id) s.job_id, s.token
    FROM unnest(%(ids)s::text[], %(tokens)s::bigint[]) WITH ORDINALITY AS s(job_id, token, i)
    ORDER BY s.job_id, s.i
) AS l
ON CONFLICT (project, environment, queue, job_id) DO UPDATE
SET expires_at = EXCLUDED.expires_at
WHERE j.token = EXCLUDED.token
RETURNING j.job_id, j.token, j.expires_at, j.xmax = 0;

-- name: ack
-- The rows are locked first, in job id order, the order extend locks them in: the
-- finisher acks while the heartbeat renews the same leases, and a scan in another
-- order (the lease index's) deadlocked with it, costing both deadlock_timeout (1 s).
-- Every lookup is one primary-key probe per id (a lateral subquery with FOR UPDATE or
-- OFFSET 0 is never flattened): with job_id = ANY(...) the planner, which costs an index
-- range by its live rows, walked the queue's whole key range, and under a held xmin
-- horizon every dead entry of every job acked since (a settle of 4 jobs read 1,900
-- buffers). The DELETE then goes by ctid, given two per row: the version this
-- statement's snapshot sees (where the TID scan finds it) and the newest one, locked
-- here (where a renewal committed meanwhile moved it: the delete follows the update
-- and rechecks the ctid against the list).
WITH locked AS MATERIALIZED (
    SELECT h.newest, h.job_id
    FROM (SELECT DISTINCT s.job_id COLLATE "C" AS job_id FROM unnest(%(ids)s::text[]) AS s(job_id) ORDER BY 1) AS i
    CROSS JOIN LATERAL (
        SELECT ctid AS newest, job_id, token FROM oqron_hot_jobs
        WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
          AND job_id = i.job_id
        FOR UPDATE
    ) AS h
    JOIN unnest(%(ids)s::text[], %(tokens)s::bigint[]) AS a(job_id, token) ON a.job_id = h.job_id AND a.token = h.token
)
DELETE FROM oqron_hot_jobs
WHERE ctid = ANY(ARRAY(
    SELECT newest FROM locked
    UNION ALL
    SELECT v.seen FROM locked AS l
    CROSS JOIN LATERAL (
        SELECT ctid AS seen FROM oqron_hot_jobs
        WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
          AND job_id = l.job_id
        OFFSET 0
    ) AS v
))
RETURNING job_id;

-- name: release
-- The lease becomes ready (fresh ord) or delayed again, if the token still matches.
WITH released AS (
    UPDATE oqron_hot_jobs
    SET token = NULL, expires_at = NULL, worker = NULL,
        priority = %(priority)s, lifo = %(lifo)s,
        run_at = CASE WHEN %(run_at)s::bigint > %(now)s THEN %(run_at)s::bigint END,
        ord = CASE WHEN %(lifo)s THEN -nextval('oqron_hot_ord_seq') ELSE nextval('oqron_hot_ord_seq') END
    WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
      AND job_id = %(job_id)s AND token = %(token)s
    RETURNING priority, ord, run_at
), lowered AS (
    -- the queue's floor goes below the first job made ready (schema: oqron_hot_heads)
    SELECT oqron_heads_lower_v1(%(project)s, %(environment)s, %(queue)s, m.rank, m.ord) AS moved
    FROM (SELECT -(priority::bigint) AS rank, ord FROM released WHERE run_at IS NULL ORDER BY 1, 2 LIMIT 1) AS m
)
SELECT pg_notify(%(channel)s, '') FROM released, (SELECT count(*) FROM lowered) AS l;

-- name: take_expired
-- Each lapsed lease goes to exactly one caller: rows another rescuer holds are skipped.
DELETE FROM oqron_hot_jobs
WHERE ctid = ANY(ARRAY(
    SELECT ctid
    FROM oqron_hot_jobs
    WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
      AND token IS NOT NULL AND expires_at <= %(now)s
    ORDER BY expires_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
))
RETURNING job_id, token, expires_at, worker;

-- name: leases_of
-- The leases of a queue held by one worker, expired or not (a read: no locks).
SELECT job_id, token, expires_at
FROM oqron_hot_jobs
WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
  AND token IS NOT NULL AND worker = %(worker)s
ORDER BY token;

-- name: remove
DELETE FROM oqron_hot_jobs
WHERE project = (SELECT %(project)s::text) AND environment = (SELECT %(environment)s::text)
  AND queue = (SELECT %(queue)s::text)
  AND job_id = ANY(%(ids)s::text[]) AND token IS NULL
RETURNING job_id;

-- name: promote
WITH promoted AS (
    UPDATE oqron_hot_jobs
    SET run_at = NULL,
        ord = CASE WHEN lifo THEN -nextval('oqron_hot_ord_seq') ELSE nextval('oqron_hot_ord_seq') END
    WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
      AND job_id = %(job_id)s AND token IS NULL AND run_at IS NOT NULL
    RETURNING priority, ord, run_at
), lowered AS (
    -- the queue's floor goes below the first job made ready (schema: oqron_hot_heads)
    SELECT oqron_heads_lower_v1(%(project)s, %(environment)s, %(queue)s, m.rank, m.ord) AS moved
    FROM (SELECT -(priority::bigint) AS rank, ord FROM promoted WHERE run_at IS NULL ORDER BY 1, 2 LIMIT 1) AS m
)
SELECT pg_notify(%(channel)s, '') FROM promoted, (SELECT count(*) FROM lowered) AS l;

-- name: present
SELECT job_id FROM oqron_hot_jobs
WHERE project = (SELECT %(project)s::text) AND environment = (SELECT %(environment)s::text)
  AND queue = (SELECT %(queue)s::text)
  AND job_id = ANY(%(ids)s::text[]);

-- name: sample
-- sample() in one round trip: up to a limit of the queue's job ids in any state (a walk of
-- the primary key; token IS NULL) and the leases that lapse first, read off the lease index
-- in its order (the caller breaks ties by id: a sort here would read every lease of the queue).
(SELECT job_id, NULL::bigint AS token, NULL::bigint AS expires_at FROM oqron_hot_jobs
 WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
 ORDER BY job_id
 LIMIT %(limit)s)
UNION ALL
(SELECT job_id, token, expires_at FROM oqron_hot_jobs
 WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s AND token IS NOT NULL
 ORDER BY expires_at
 LIMIT %(limit)s);

-- name: depths
SELECT count(*) FILTER (WHERE token IS NULL AND (run_at IS NULL OR run_at <= %(now)s)),
       count(*) FILTER (WHERE token IS NULL AND run_at > %(now)s),
       count(*) FILTER (WHERE token IS NOT NULL)
FROM oqron_hot_jobs
WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s;

-- name: depths_many
-- depths() of every queue of the scope in one pass over its rows (the board's overview);
-- the caller keeps the queues it asked for (no per-row queue = ANY(...) test: cheaper).
SELECT queue,
       count(*) FILTER (WHERE token IS NULL AND (run_at IS NULL OR run_at <= %(now)s)),
       count(*) FILTER (WHERE token IS NULL AND run_at > %(now)s),
       count(*) FILTER (WHERE token IS NOT NULL)
FROM oqron_hot_jobs
WHERE project = %(project)s AND environment = %(environment)s
GROUP BY queue;

-- name: next_due
SELECT min(run_at) FROM oqron_hot_jobs
WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
  AND token IS NULL AND run_at IS NOT NULL;

-- name: any_ready
-- wait(): is there already something to claim in one of these queues?
-- Each queue from its floor (schema: oqron_hot_heads), not from its head.
SELECT EXISTS (
    SELECT 1
    FROM unnest(%(queues)s::text[]) AS q(queue)
    LEFT JOIN oqron_hot_heads AS h
      ON h.project = %(project)s AND h.environment = %(environment)s AND h.queue = q.queue COLLATE "C"
    CROSS JOIN LATERAL (
        SELECT 1 FROM oqron_hot_jobs AS j
        WHERE j.project = %(project)s AND j.environment = %(environment)s AND j.queue = q.queue COLLATE "C"
          AND j.token IS NULL AND j.run_at IS NULL
          AND (-(j.priority::bigint), j.ord)
              >= (coalesce(h.lo_rank, -9223372036854775807), coalesce(h.lo_ord, -9223372036854775807))
        LIMIT 1
    ) AS r
);

-- name: acquire_lock
-- Take a free or lapsed lock, or renew our own.
INSERT INTO oqron_hot_locks AS l (project, environment, name, owner, expires_at)
VALUES (%(project)s, %(environment)s, %(name)s, %(owner)s, %(expires_at)s)
ON CONFLICT (project, environment, name) DO UPDATE
SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
WHERE l.owner = EXCLUDED.owner OR l.expires_at <= %(now)s
RETURNING 1;

-- name: release_lock
DELETE FROM oqron_hot_locks
WHERE project = %(project)s AND environment = %(environment)s AND name = %(name)s AND owner = %(owner)s
RETURNING 1;

-- name: lock_owner
SELECT owner FROM oqron_hot_locks
WHERE project = %(project)s AND environment = %(environment)s AND name = %(name)s AND expires_at > %(now)s;

-- name: incr
INSERT INTO oqron_hot_counters AS c (project, environment, name, value)
VALUES (%(project)s, %(environment)s, %(name)s, %(by)s)
ON CONFLICT (project, environment, name) DO UPDATE SET value = c.value + EXCLUDED.value
RETURNING c.value;

-- name: get_counters
SELECT name, value FROM oqron_hot_counters
WHERE project = (SELECT %(project)s::text) AND environment = (SELECT %(environment)s::text)
  AND name = ANY(%(names)s::text[]);

-- name: kv_set
INSERT INTO oqron_hot_kv (project, environment, grp, key, value, expires_at)
SELECT %(project)s, %(environment)s, %(group)s, s.key, s.value, %(expires_at)s
FROM unnest(%(keys)s::text[], %(values)s::text[]) AS s(key, value)
ORDER BY s.key
ON CONFLICT (project, environment, grp, key) DO UPDATE
SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at;

-- name: kv_get
SELECT key, value FROM oqron_hot_kv
WHERE project = (SELECT %(project)s::text) AND environment = (SELECT %(environment)s::text)
  AND grp = (SELECT %(group)s::text)
  AND key = ANY(%(keys)s::text[]) AND expires_at > %(now)s;

-- name: kv_all
-- Lapsed keys of the group are pruned on the way (the memory plane does the same), so
-- crashed workers' heartbeats do not pile up.
WITH pruned AS (
    DELETE FROM oqron_hot_kv
    WHERE project = %(project)s AND environment = %(environment)s AND grp = %(group)s
      AND expires_at <= %(now)s
)
SELECT key, value FROM oqron_hot_kv
WHERE project = %(project)s AND environment = %(environment)s AND grp = %(group)s
  AND expires_at > %(now)s;

-- name: kv_get_with_counters
-- kv_get and get_counters in one statement: ('v', key, value) and ('c', name, value) rows.
SELECT 'v', key, value FROM oqron_hot_kv
WHERE project = (SELECT %(project)s::text) AND environment = (SELECT %(environment)s::text)
  AND grp = (SELECT %(group)s::text)
  AND key = ANY(%(keys)s::text[]) AND expires_at > %(now)s
UNION ALL
SELECT 'c', name, value::text FROM oqron_hot_counters
WHERE project = (SELECT %(project)s::text) AND environment = (SELECT %(environment)s::text)
  AND name = ANY(%(names)s::text[]);

-- name: kv_prune
-- The group's lapsed keys (a cache calls it now and then: kv_set does not prune here).
WITH gone AS (
    DELETE FROM oqron_hot_kv
    WHERE project = (SELECT %(project)s::text) AND environment = (SELECT %(environment)s::text)
      AND grp = (SELECT %(group)s::text) AND expires_at <= %(now)s
    RETURNING 1
)
SELECT count(*) FROM gone;

-- name: kv_delete
DELETE FROM oqron_hot_kv
WHERE project = (SELECT %(project)s::text) AND environment = (SELECT %(environment)s::text)
  AND grp = (SELECT %(group)s::text)
  AND key = ANY(%(keys)s::text[]);

-- name: listen
-- The channel is filled in with psycopg.sql.Identifier (a name from channel_for).
LISTEN {channel};

-- name: raise_token
-- A lease re-created by extend keeps its token; move the token sequence past it so
-- that token is never handed out again.
SELECT setval('oqron_hot_token_seq', greatest(last_value, %(token)s::bigint)) FROM oqron_hot_token_seq;

-- name: rate_hit
-- One check of one key (oqron_rate_hit_v4 in hot_schema.sql): {allowed, limit, remaining, reset, retry_after, banned,
-- tier}.
SELECT oqron_rate_hit_v4(%(project)s, %(environment)s, %(name)s, %(key)s, %(now)s, %(cost)s, %(ttl)s,
                         %(ban)s::bigint[], %(algorithms)s::text[], %(limits)s::bigint[], %(periods)s::bigint[],
                         %(fields)s::text[]);

-- name: rate_drop
-- Forget the named parts of one key's state.
UPDATE oqron_hot_rates SET state = state - %(fields)s::text[]
WHERE project = %(project)s AND environment = %(environment)s AND name = %(name)s AND key = %(key)s;

-- name: rate_override
-- Give one key its own limits; an expired state is forgotten first.
INSERT INTO oqron_hot_rates AS r (project, environment, name, key, state, expires_at)
VALUES (%(project)s, %(environment)s, %(name)s, %(key)s, jsonb_build_object('ov', %(limits)s::bigint[]),
        %(expires_at)s)
ON CONFLICT (project, environment, name, key) DO UPDATE
SET state = CASE WHEN r.expires_at > %(now)s THEN r.state ELSE '{}' END || EXCLUDED.state,
    expires_at = greatest(r.expires_at, EXCLUDED.expires_at);

-- name: rate_prune
-- Expired rate-limit states.
DELETE FROM oqron_hot_rates WHERE expires_at <= %(now)s;

-- name: qlimit_ensure
-- A limited claim's (and a start gate's) first statement: the queue's limit row, created if missing.
INSERT INTO oqron_hot_qlimits (project, environment, queue, state)
VALUES (%(project)s, %(environment)s, %(queue)s, '')
ON CONFLICT (project, environment, queue) DO NOTHING;

-- name: qlimit_lock
-- Its second: the row locked until the transaction ends, read once the previous
-- claimer committed (a lock, not a write: an idle poll leaves no dead tuple).
SELECT state FROM oqron_hot_qlimits
WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
FOR UPDATE;

-- name: qlimit_write
UPDATE oqron_hot_qlimits SET state = %(state)s
WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s;

-- name: qlimit_read
SELECT state FROM oqron_hot_qlimits
WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s;

-- name: live_leases
-- A queue's leases still live at now: its global concurrency in use (the lease index).
SELECT count(*) FROM oqron_hot_jobs
WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
  AND token IS NOT NULL AND expires_at > %(now)s;

-- name: queue_has_ready
-- From the queue's floor (schema: oqron_hot_heads), not from its head.
SELECT EXISTS (
    SELECT 1 FROM oqron_hot_jobs
    WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
      AND token IS NULL AND run_at IS NULL
      AND (-(priority::bigint), ord) >= (
          coalesce((SELECT lo_rank FROM oqron_hot_heads WHERE project = %(project)s
                    AND environment = %(environment)s AND queue = %(queue)s), -9223372036854775807),
          coalesce((SELECT lo_ord FROM oqron_hot_heads WHERE project = %(project)s
                    AND environment = %(environment)s AND queue = %(queue)s), -9223372036854775807))
);

-- name: heads_try
SELECT pg_try_advisory_xact_lock(hashtext('oqron_heads'),
                                 hashtext(%(project)s || chr(1) || %(environment)s || chr(1) || %(queue)s));

-- name: heads_raise
-- Under heads_try's lock, in the same transaction: no job is being made ready, so the
-- first ready job at or after the floor is the lowest ready job; with none, the last
-- position the caller claimed (whatever comes ready below it lowers the floor again).
INSERT INTO oqron_hot_heads AS h (project, environment, queue, lo_rank, lo_ord)
SELECT %(project)s, %(environment)s, %(queue)s, coalesce(n.rank, %(rank)s), coalesce(n.ord, %(ord)s)
FROM (SELECT 1) AS one
LEFT JOIN LATERAL (
    SELECT -(priority::bigint) AS rank, ord FROM oqron_hot_jobs
    WHERE project = %(project)s AND environment = %(environment)s AND queue = %(queue)s
      AND token IS NULL AND run_at IS NULL
      AND (-(priority::bigint), ord) >= (
          coalesce((SELECT lo_rank FROM oqron_hot_heads WHERE project = %(project)s
                    AND environment = %(environment)s AND queue = %(queue)s), -9223372036854775807),
          coalesce((SELECT lo_ord FROM oqron_hot_heads WHERE project = %(project)s
                    AND environment = %(environment)s AND queue = %(queue)s), -9223372036854775807))
    ORDER BY 1, 2
    LIMIT 1
) AS n ON true
ON CONFLICT (project, environment, queue) DO UPDATE
SET lo_rank = EXCLUDED.lo_rank, lo_ord = EXCLUDED.lo_ord
WHERE (EXCLUDED.lo_rank, EXCLUDED.lo_ord) > (h.lo_rank, h.lo_ord);

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

-- claim: the next ready jobs in order, read straight off the index under LIMIT, from
-- the queue's floor (oqron_hot_heads) on: the rank -priority ascends where priority
-- descends, so "at or after the floor" is one row comparison the index answers.
CREATE INDEX IF NOT EXISTS oqron_hot_jobs_rank_idx
    ON oqron_hot_jobs (project, environment, queue, (-(priority::bigint)), ord)
    WHERE token IS NULL AND run_at IS NULL;
DROP INDEX IF EXISTS oqron_hot_jobs_ready_idx;
-- Per queue, a position (rank, ord) at or before every ready job. A held xmin horizon
-- keeps the index entry of every job claimed since, so a claim reading from the queue's
-- head met them all; from the floor it meets those claimed since the floor last moved.
-- Whatever makes a job ready lowers it below that job in the same statement
-- (oqron_heads_lower_v1); a claimer raises it (heads.py) only under the queue's advisory
-- lock, taken exclusively, which oqron_heads_lower_v1 takes shared: no job in flight can
-- end up below it. No row: no floor.
CREATE UNLOGGED TABLE IF NOT EXISTS oqron_hot_heads (
    project     text   COLLATE "C" NOT NULL,
    environment text   COLLATE "C" NOT NULL,
    queue       text   COLLATE "C" NOT NULL,
    lo_rank     bigint NOT NULL,
    lo_ord      bigint NOT NULL,
    PRIMARY KEY (project, environment, queue)
) WITH (fillfactor = 50);
-- Lower a queue's floor to (p_rank, p_ord) if it lies above. VOLATILE: after the lock, the
-- UPDATE reads with a new snapshot, so it compares with a raise committed while this
-- statement waited for the lock (the calling statement's snapshot predates that raise).
CREATE OR REPLACE FUNCTION oqron_heads_lower_v1(p_project text, p_environment text, p_queue text,
                                                p_rank bigint, p_ord bigint)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtext('oqron_heads'),
        hashtext(p_project || chr(1) || p_environment || chr(1) || p_queue));
    UPDATE oqron_hot_heads AS h SET lo_rank = p_rank, lo_ord = p_ord
    WHERE h.project = p_project AND h.environment = p_environment AND h.queue = p_queue
      AND (p_rank, p_ord) < (h.lo_rank, h.lo_ord);
    RETURN FOUND;
END $$;
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

-- The hot plane's epoch (postgres/epoch.py): one row, emptied with the other tables by
-- crash recovery, so a process's next connection finds it gone (or another epoch).
CREATE UNLOGGED TABLE IF NOT EXISTS oqron_hot_epoch (
    one   boolean PRIMARY KEY CHECK (one),
    epoch text    NOT NULL
);
-- Written with the tables, so a process that finds the schema made by another before
-- that one read its epoch does not take the missing row for a crash's.
INSERT INTO oqron_hot_epoch (one, epoch) VALUES (true, md5(clock_timestamp()::text || random()::text))
ON CONFLICT DO NOTHING;

-- Cluster-wide queue limits (backends/claim_limits.py): per queue, the JSON log of claim
-- times inside the rate window and the per-minute held-back counts. A limited claim
-- locks its queue's row first (postgres/qlimits.py), so limited claims of one queue run
-- one after another, each counting the leases and starts its predecessors committed.
CREATE UNLOGGED TABLE IF NOT EXISTS oqron_hot_qlimits (
    project     text COLLATE "C" NOT NULL,
    environment text COLLATE "C" NOT NULL,
    queue       text COLLATE "C" NOT NULL,
    state       text NOT NULL,
    PRIMARY KEY (project, environment, queue)
);

-- Rate limiters' state of one key: jsonb {"<tier field>": [n, ...], "ban": [start,
-- strikes, until], "ov": [limit, ...]}, gone once expires_at <= now (pruned by upkeep).
-- Checked by oqron_rate_hit_v4 below, a port of backends/rate_step.py. An exact sliding
-- window's numbers are its log: [newest, in window, *unit times ascending].
CREATE UNLOGGED TABLE IF NOT EXISTS oqron_hot_rates (
    project     text   COLLATE "C" NOT NULL,
    environment text   COLLATE "C" NOT NULL,
    name        text   COLLATE "C" NOT NULL,
    key         text   COLLATE "C" NOT NULL,
    state       jsonb  NOT NULL,
    expires_at  bigint NOT NULL,
    PRIMARY KEY (project, environment, name, key)
);

-- Exact integer floor and ceiling division (bigint '/' truncates toward zero).
CREATE OR REPLACE FUNCTION oqron_rate_fdiv(a bigint, b bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT floor(a::numeric / b)::bigint $$;
CREATE OR REPLACE FUNCTION oqron_rate_cdiv(a bigint, b bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT ceil(a::numeric / b)::bigint $$;

-- How many of the newest units of an exact sliding window's log are at or after
-- p_bound: among the newest p_known if not p_more (the window moved on: rate_step._fewer),
-- else at least p_known (a lagging clock: _more); galloping from p_known, then halving.
-- The k-th newest unit is p_log[cardinality(p_log) - k + 1], for k from 1 to the count.
CREATE OR REPLACE FUNCTION oqron_rate_units_v1(p_log bigint[], p_known bigint, p_bound bigint, p_more boolean)
RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v_last int := cardinality(p_log); v_count bigint := cardinality(p_log) - 2;
    v_lo bigint; v_hi bigint; v_step bigint := 1; v_mid bigint;
BEGIN
    IF NOT p_more THEN
        IF p_known BETWEEN 1 AND v_count AND p_log[v_last - p_known + 1] >= p_bound THEN RETURN p_known; END IF;
        v_hi := p_known; v_lo := v_hi - v_step;
        WHILE v_lo > 0 LOOP
            EXIT WHEN v_lo <= v_count AND p_log[v_last - v_lo + 1] >= p_bound;
            v_hi := v_lo; v_step := v_step * 2; v_lo := v_hi - v_step;
        END LOOP;
        v_lo := greatest(v_lo, 0);
    ELSE
        v_lo := p_known; v_hi := v_lo + v_step;
        WHILE v_hi <= v_count AND p_log[v_last - v_hi + 1] >= p_bound LOOP
            v_lo := v_hi; v_step := v_step * 2; v_hi := v_lo + v_step;
        END LOOP;
    END IF;
    WHILE v_hi - v_lo > 1 LOOP
        v_mid := (v_lo + v_hi) / 2;
        IF v_mid <= v_count AND p_log[v_last - v_mid + 1] >= p_bound THEN v_lo := v_mid; ELSE v_hi := v_mid; END IF;
    END LOOP;
    RETURN v_lo;
END $$;

-- One check of one key against every tier: all take p_cost or none does (0: a peek,
-- nothing counted). Locks only this key's row. Returns {allowed, limit, remaining,
-- reset, retry_after, banned, the binding tier's index from 0}. A changed body gets a new _vN name (ensure_ready
-- re-runs this script only when a table or function it names is missing).
CREATE OR REPLACE FUNCTION oqron_rate_hit_v4(
    p_project text, p_environment text, p_name text, p_key text, p_now bigint, p_cost bigint, p_ttl bigint,
    p_ban bigint[], p_algorithms text[], p_limits bigint[], p_periods bigint[], p_fields text[]
) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    v_state jsonb; v_expires bigint; v_n bigint[]; v_ban bigint[]; v_ov bigint[];
    v_tiers int := cardinality(p_algorithms); v_alg text; v_lim bigint; v_per bigint; v_now bigint;
    v_w bigint; v_used bigint; v_cur bigint; v_prev bigint; v_elapsed bigint; v_ok boolean;
    v_room bigint; v_first bigint; v_later bigint; v_full bigint; v_level bigint; v_need bigint;
    v_after bigint; v_tat bigint; v_frac bigint; v_spread bigint; v_ahead bigint; v_held bigint;
    v_newest bigint; v_at bigint; v_frees bigint; v_units bigint[]; v_counts text; v_migrated boolean := false;
    v_all boolean := true; v_new jsonb := '{}';
    v_oks boolean[] := '{}'; v_lims bigint[] := '{}'; v_rems bigint[] := '{}'; v_resets bigint[] := '{}';
    v_retries bigint[] := '{}'; v_rem bigint; v_reset bigint; v_retry bigint; v_b int := 0;
    v_start bigint; v_strikes bigint; v_banned int := 0;
BEGIN
    INSERT INTO oqron_hot_rates (project, environment, name, key, state, expires_at)
    VALUES (p_project, p_environment, p_name, p_key, '{}', p_now + p_ttl) ON CONFLICT DO NOTHING;
    SELECT r.state, r.expires_at INTO v_state, v_expires FROM oqron_hot_rates r
    WHERE r.project = p_project AND r.environment = p_environment AND r.name = p_name AND r.key = p_key
    FOR UPDATE;
    IF v_expires <= p_now THEN v_state := '{}'; END IF;
    v_ban := ARRAY(SELECT jsonb_array_elements_text(coalesce(v_state->'ban', '[]'))::bigint);
    IF cardinality(v_ban) = 3 AND v_ban[3] > p_now THEN
        RETURN ARRAY[0, p_limits[1], 0, v_ban[3], v_ban[3] - p_now, 1, 0];
    END IF;
    FOR i IN 1..v_tiers LOOP  -- an exact sliding window with no log yet starts from old counts (_from_counts)
        v_per := p_periods[i]; v_counts := 'sliding-window:' || v_per;
        CONTINUE WHEN p_algorithms[i] <> 'sliding-window' OR v_state ? p_fields[i] OR NOT v_state ? v_counts;
        v_n := ARRAY(SELECT jsonb_array_elements_text(v_state->v_counts)::bigint);
        v_state := v_state - v_counts; v_migrated := true;
        v_at := least(greatest(p_now, v_n[1] * v_per), (v_n[1] + 1) * v_per - 1);
        v_used := v_n[2] + v_n[3];
        IF v_used > 0 AND v_at >= p_now - v_per THEN
            v_state := v_state || jsonb_build_object(p_fields[i],
                to_jsonb(ARRAY[v_at, v_used] || array_fill(v_at, ARRAY[v_used::int])));
        END IF;
    END LOOP;
    v_ov := ARRAY(SELECT jsonb_array_elements_text(coalesce(v_state->'ov', '[]'))::bigint);
    FOR i IN 1..v_tiers LOOP
        v_alg := p_algorithms[i]; v_per := p_periods[i]; v_now := p_now;
        v_lim := CASE WHEN cardinality(v_ov) = v_tiers THEN v_ov[i] ELSE p_limits[i] END;
        v_n := ARRAY(SELECT jsonb_array_elements_text(coalesce(v_state->p_fields[i], '[]'))::bigint);
        IF v_alg IN ('fixed-window', 'sliding-window-approx') THEN
            v_w := oqron_rate_fdiv(v_now, v_per);
            IF cardinality(v_n) > 0 AND v_n[1] > v_w THEN v_w := v_n[1]; v_now := v_w * v_per; END IF;
        END IF;
        IF v_alg = 'sliding-window' THEN  -- exact: the log (rate_step._log)
            v_newest := coalesce(v_n[1], p_now); v_held := coalesce(v_n[2], 0);
            v_now := greatest(p_now, v_newest - v_per);  -- a clock over a period behind counts as one period behind
            v_at := greatest(v_now, v_newest);
            IF v_now > v_newest THEN
                v_held := CASE WHEN v_newest >= v_now - v_per
                    THEN oqron_rate_units_v1(v_n, v_held, v_now - v_per, false) ELSE 0 END;
            END IF;
            v_used := CASE WHEN v_now < v_newest THEN oqron_rate_units_v1(v_n, v_held, v_now - v_per, true)
                ELSE v_held END;
            v_ok := v_used + p_cost <= v_lim;
            v_after := CASE WHEN v_ok THEN v_used + p_cost ELSE v_used END;
            v_rem := v_lim - v_after;
            v_retry := 0;
            IF NOT v_ok THEN  -- when enough units have left: the (limit - cost + 1)-th newest, or all
                v_frees := CASE WHEN p_cost <= v_lim AND v_lim - p_cost + 1 <= cardinality(v_n) - 2
                    THEN v_n[cardinality(v_n) - (v_lim - p_cost + 1) + 1] WHEN p_cost > v_lim AND v_used > 0 THEN v_newest END;
                v_retry := CASE WHEN v_frees IS NULL THEN v_per + 1 ELSE v_frees + v_per + 1 - p_now END;
            END IF;
            IF v_ok AND p_cost > 0 THEN
                v_reset := v_at + v_per + 1;
                v_units := v_n[3:cardinality(v_n)] || array_fill(v_at, ARRAY[p_cost::int]);
                v_n := ARRAY[v_at, v_held + p_cost]
                    || v_units[greatest(1, cardinality(v_units) - 2 * v_lim + 1):cardinality(v_units)];
            ELSE
                v_reset := CASE WHEN v_after > 0 THEN v_newest + v_per + 1 ELSE p_now END;
            END IF;
        ELSIF v_alg = 'fixed-window' THEN
            v_used := CASE WHEN cardinality(v_n) > 0 AND v_n[1] = v_w THEN v_n[2] ELSE 0 END;
            v_ok := v_used + p_cost <= v_lim;
            v_reset := (v_w + 1) * v_per;
            v_rem := v_lim - v_used - CASE WHEN v_ok THEN p_cost ELSE 0 END;
            v_retry := CASE WHEN v_ok THEN 0 ELSE v_reset - v_now END;
            v_n := ARRAY[v_w, v_used + p_cost];
        ELSIF v_alg = 'sliding-window-approx' THEN
            v_cur := 0; v_prev := 0;
            IF cardinality(v_n) > 0 AND v_n[1] = v_w THEN v_cur := v_n[2]; v_prev := v_n[3];
            ELSIF cardinality(v_n) > 0 AND v_n[1] = v_w - 1 THEN v_prev := v_n[2];
            END IF;
            v_elapsed := v_now - v_w * v_per;
            v_used := v_cur + oqron_rate_fdiv(v_prev * (v_per - v_elapsed), v_per);
            v_ok := v_used + p_cost <= v_lim;
            v_retry := 0;
            IF NOT v_ok THEN
                v_room := v_lim - v_cur - p_cost;
                v_first := v_per;
                IF v_room >= 0 AND v_prev > 0 THEN
                    v_first := v_per - oqron_rate_cdiv((v_room + 1) * v_per, v_prev) + 1;
                END IF;
                IF v_first < v_per THEN
                    v_retry := v_first - v_elapsed;
                ELSE
                    v_later := 0;
                    IF v_cur > 0 THEN
                        v_later := greatest(0, v_per - oqron_rate_cdiv((v_lim - p_cost + 1) * v_per, v_cur) + 1);
                    END IF;
                    v_retry := v_per - v_elapsed + v_later;
                END IF;
            END IF;
            v_rem := v_lim - v_used - CASE WHEN v_ok THEN p_cost ELSE 0 END;
            v_reset := (v_w + 1) * v_per;
            v_n := ARRAY[v_w, v_cur + p_cost, v_prev];
        ELSIF v_alg = 'token-bucket' THEN
            v_full := v_lim * v_per; v_level := v_full;
            IF cardinality(v_n) > 0 THEN
                v_level := least(v_full, v_n[2] + greatest(0, v_now - v_n[1]) * v_lim);
                v_now := greatest(v_now, v_n[1]);
            END IF;
            v_need := p_cost * v_per;
            v_ok := v_level >= v_need;
            v_after := CASE WHEN v_ok THEN v_level - v_need ELSE v_level END;
            v_retry := CASE WHEN v_ok THEN 0 ELSE oqron_rate_cdiv(v_need - v_level, v_lim) END;
            v_rem := oqron_rate_fdiv(v_after, v_per);
            v_reset := v_now + oqron_rate_cdiv(v_full - v_after, v_lim);
            v_n := ARRAY[v_now, v_level - v_need];
        ELSE  -- gcra: the theoretical arrival time is tat + frac / limit
            v_tat := v_now; v_frac := 0;
            IF cardinality(v_n) > 0 AND v_n[1] >= v_now THEN v_tat := v_n[1]; v_frac := v_n[2]; END IF;
            v_spread := v_frac + p_cost * v_per;
            v_ahead := (v_tat + oqron_rate_fdiv(v_spread, v_lim) - v_now) * v_lim + v_spread % v_lim;
            v_ok := v_ahead <= v_per * v_lim;
            v_held := CASE WHEN v_ok THEN v_ahead ELSE (v_tat - v_now) * v_lim + v_frac END;
            v_retry := CASE WHEN v_ok THEN 0 ELSE oqron_rate_cdiv(v_ahead - v_per * v_lim, v_lim) END;
            v_rem := oqron_rate_fdiv(v_per * v_lim - v_held, v_per);
            v_reset := v_now + oqron_rate_cdiv(v_held, v_lim);
            v_n := ARRAY[v_tat + oqron_rate_fdiv(v_spread, v_lim), v_spread % v_lim];
        END IF;
        v_all := v_all AND v_ok;
        v_oks := v_oks || v_ok; v_lims := v_lims || v_lim; v_rems := v_rems || v_rem;
        v_resets := v_resets || v_reset; v_retries := v_retries || v_retry;
        v_new := v_new || jsonb_build_object(p_fields[i], to_jsonb(v_n));
    END LOOP;
    FOR i IN 1..v_tiers LOOP  -- the binding tier: least room if allowed, else the longest wait
        IF v_all AND (v_b = 0 OR v_rems[i] < v_rems[v_b]) THEN v_b := i;
        ELSIF NOT v_all AND NOT v_oks[i] AND (v_b = 0 OR v_retries[i] > v_retries[v_b]) THEN v_b := i;
        END IF;
    END LOOP;
    IF p_cost > 0 AND v_all THEN
        v_state := v_state || v_new;
    ELSIF p_cost > 0 AND cardinality(p_ban) = 3 THEN
        v_start := p_now; v_strikes := 0;
        IF cardinality(v_ban) = 3 AND p_now - v_ban[1] < p_ban[2] THEN
            v_start := v_ban[1]; v_strikes := v_ban[2];
        END IF;
        v_strikes := v_strikes + 1;
        v_state := v_state || jsonb_build_object('ban', to_jsonb(CASE WHEN v_strikes >= p_ban[1]
            THEN ARRAY[p_now, 0, p_now + p_ban[3]] ELSE ARRAY[v_start, v_strikes, 0] END));
        IF v_strikes >= p_ban[1] THEN  -- this refusal starts a ban: say so
            v_banned := 1; v_rems[v_b] := 0; v_resets[v_b] := p_now + p_ban[3]; v_retries[v_b] := p_ban[3];
        END IF;
    ELSIF NOT v_migrated THEN
        RETURN ARRAY[v_all::int, v_lims[v_b], v_rems[v_b], v_resets[v_b], v_retries[v_b], 0, v_b - 1];
    END IF;
    UPDATE oqron_hot_rates r SET state = v_state, expires_at = greatest(r.expires_at, p_now + p_ttl)
    WHERE r.project = p_project AND r.environment = p_environment AND r.name = p_name AND r.key = p_key;
    RETURN ARRAY[v_all::int, v_lims[v_b], v_rems[v_b], v_resets[v_b], v_retries[v_b], v_banned, v_b - 1];
END $$;

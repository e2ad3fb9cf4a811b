-- bench/metrics_scrape.py's bulk seed, one statement per block (split on blank-line "-- name:").
-- Parameters: project, environment, runs, jobs, dead, queues, now (epoch ms).
-- Rows are in the shapes the engine writes (oqronkit/queues/runs.py, oqronkit/queues/jobs.py), lean but complete
-- in every key the board's queries read.

-- name: runs
-- Runs over the last 7 days, 5 % failed, across the queues.
INSERT INTO oqron_runs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT %(project)s, %(environment)s, 'runs', 'run', 'run-' || i,
       jsonb_build_object(
           'id', 'run-' || i, 'name', 'q' || (i %% %(queues)s), 'module', 'queue', 'trigger', 'queue',
           'status', CASE WHEN i %% 20 = 0 THEN 'failed' ELSE 'completed' END,
           'startedAt', %(now)s - (i::bigint * 604800000 / %(runs)s),
           'finishedAt', %(now)s - (i::bigint * 604800000 / %(runs)s) + 40,
           'duration', 40, 'attempts', 1, 'jobId', 'job-' || i, 'workerId', 'worker-' || (i %% 8),
           'app', %(project)s::text, 'environment', %(environment)s::text,
           'input', jsonb_build_object('i', i, 'to', 'user-' || i || '@example.com'),
           'output', NULL, 'error', NULL, 'logs', '[]'::jsonb, 'timeline', '[]'::jsonb),
       %(now)s
FROM generate_series(1, %(runs)s) AS i;

-- name: jobs
-- The backlog: waiting jobs, one in twenty delayed, then the dead letters.
INSERT INTO oqron_jobs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT %(project)s, %(environment)s,
       CASE WHEN i <= %(dead)s THEN 'queue_dlq:' ELSE 'queue_job:' END || 'q' || (i %% %(queues)s),
       CASE WHEN i <= %(dead)s THEN 'dlq' ELSE 'job' END, 'job-b' || i,
       jsonb_build_object(
           'id', 'job-b' || i, 'queue', 'q' || (i %% %(queues)s),
           'status', CASE WHEN i <= %(dead)s THEN 'dead' WHEN i %% 20 = 0 THEN 'delayed' ELSE 'waiting' END,
           'createdAt', %(now)s - (%(jobs)s - i) * 10, 'updatedAt', %(now)s, 'attempts', 0, 'maxAttempts', 4,
           'priority', 0, 'lifo', false, 'data', jsonb_build_object('i', i),
           'errorFingerprint', CASE WHEN i <= %(dead)s THEN 'fp' || (i %% 5) END,
           'diedAt', CASE WHEN i <= %(dead)s THEN %(now)s - i END),
       %(now)s
FROM generate_series(1, %(jobs)s) AS i;

-- name: hot
-- The hot plane's rows of the live backlog (ready, or delayed an hour).
INSERT INTO oqron_hot_jobs (project, environment, queue, job_id, priority, ord, lifo, run_at)
SELECT %(project)s, %(environment)s, 'q' || (i %% %(queues)s), 'job-b' || i, 0, i, false,
       CASE WHEN i %% 20 = 0 THEN %(now)s + 3600000 END
FROM generate_series(%(dead)s + 1, %(jobs)s) AS i;

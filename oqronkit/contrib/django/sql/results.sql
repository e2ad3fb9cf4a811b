-- A django.tasks result read back (oqronkit/contrib/django/tasks/results.py): the task's
-- job and its runs, through the alias holding the engine's tables. Each query is spelt
-- like the engine's indexes: the primary key, and the runs' jobId index.
-- Parameters (Django's cursor style, %s): see each query.

-- name: pg_job
-- project, environment, a JSON array of namespaces, the job id: the job (waiting, running or dead).
SELECT namespace, value::text FROM oqron_jobs
WHERE project = %s AND environment = %s AND namespace = ANY(ARRAY(SELECT jsonb_array_elements_text(%s::jsonb)))
  AND id = %s
LIMIT 1;

-- name: pg_runs
-- project, environment, the job id, the most runs: its runs, oldest first.
SELECT value::text FROM oqron_runs
WHERE project = %s AND environment = %s AND namespace = 'runs' AND (value->>'jobId') = %s
ORDER BY ((value->>'startedAt')::float8), id
LIMIT %s;

-- name: sqlite_job
-- project, environment, a JSON array of namespaces, the job id: the job (waiting, running or dead).
SELECT namespace, value FROM oqron_jobs
WHERE project = %s AND environment = %s AND namespace IN (SELECT value FROM json_each(%s)) AND id = %s
LIMIT 1;

-- name: sqlite_runs
-- project, environment, the job id, the most runs: its runs, oldest first.
SELECT value FROM oqron_runs
WHERE project = %s AND environment = %s AND namespace = 'runs' AND json_extract(value, '$.jobId') = %s
ORDER BY json_extract(value, '$.startedAt'), id
LIMIT %s;

-- Dead letters for bench/bulk_operations.py: %(count)s rows in one statement (not the
-- engine's per-job path), each shaped as the engine writes a dead letter.
INSERT INTO oqron_jobs (project, environment, namespace, record_kind, id, value, inserted_at, expires_at)
SELECT %(project)s::text, %(environment)s::text, %(namespace)s::text, 'dlq', lpad(g::text, 8, '0'),
       %(template)s::jsonb || jsonb_build_object('id', lpad(g::text, 8, '0'), 'queue', %(queue)s::text,
                                                  'createdAt', %(at)s::bigint - 60000,
                                                  'updatedAt', %(at)s::bigint - g, 'diedAt', %(at)s::bigint - g),
       %(at)s::bigint, NULL
FROM generate_series(1, %(count)s) AS g

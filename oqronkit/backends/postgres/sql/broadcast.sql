-- OqronKit hot plane on PostgreSQL: broadcast messages (postgres/broadcast.py), the
-- cache's L1 invalidations. Channels are fixed-length hashes (broadcast_channel).

-- name: broadcast
-- Sent when the (autocommitted) statement commits.
SELECT pg_notify(%(channel)s, %(message)s);

-- name: listen
-- The channel is filled in with psycopg.sql.Identifier.
LISTEN {channel};

-- How far a read replica trails the primary (oqronboard/base/replica_lag.py).
-- Both queries touch no table: a few microseconds each, run at most once per check window.

-- name: primary_position
-- The primary's current WAL write position, as text (the standby compares it to its replay position).
SELECT pg_current_wal_lsn()::text;

-- name: replica_lag
-- On the standby, given the primary's position (the one parameter): whether it is a standby at all, how many WAL
-- bytes its replay trails that position, and the seconds since the last transaction it replayed
-- (what an operator calls lag; meaningful only while it trails, an idle primary replays nothing).
SELECT pg_is_in_recovery(),
       pg_wal_lsn_diff(%s::pg_lsn, pg_last_wal_replay_lsn())::float8,
       EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8;

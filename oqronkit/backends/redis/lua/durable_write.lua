-- requires: durable_lib.lua
-- durable_write.lua: every write of the Redis durable store (put_many, apply,
-- insert_many, delete_many, compare_and_set, both prunes), as one atomic batch.
--
-- KEYS and ARGV: durable_write's keys and argv, as durable_lib.lua lists them: KEYS in
-- fives per (table, namespace) group (rows, ins, st, nsk, exp), ARGV[1] the scope's
-- durable base, then per group its table, namespace, kind, operation count and operations.
-- Returns one 1 (done) or 0 (not done) per operation, in order.

return durable_write(KEYS, ARGV)

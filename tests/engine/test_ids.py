"""Ids: time-ordered, unique within a process and across forked children."""

from __future__ import annotations

import os
import warnings

from oqronkit.ids import ascending_ids_at, new_id


def test_ids_are_time_ordered_hex_and_unique():
    ids = [new_id() for _ in range(50_000)]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 26 and int(i, 16) >= 0 for i in ids)
    assert [i[:12] for i in ids] == sorted(i[:12] for i in ids)


def test_a_forked_child_does_not_repeat_its_parents_ids():
    read, write = os.pipe()
    with warnings.catch_warnings():  # other tests' pool threads: harmless, the child only writes a pipe
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: its next ids, then exit without running pytest's teardown
        os.write(write, " ".join(new_id()[12:] for _ in range(100)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        child = set(pipe.read().split())
    parent = {new_id()[12:] for _ in range(100)}
    assert len(child) == 100 and not child & parent


def test_a_batchs_ids_ascend_in_the_new_id_format_and_batches_differ():
    at = 1_764_800_000_000
    first, second = ascending_ids_at(at), ascending_ids_at(at)
    batch = [first() for _ in range(10_000)]
    other = [second() for _ in range(10_000)]
    assert batch == sorted(batch) and len(set(batch)) == len(batch)
    assert all(len(i) == 26 and i[:12] == f"{at:012x}" and int(i, 16) >= 0 for i in batch + other)
    assert not set(batch) & set(other)

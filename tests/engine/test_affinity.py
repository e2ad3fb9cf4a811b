"""Worker CPU pinning: workers on one host take different CPUs, and pinning can be off."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from oqronkit.config import worker_environment
from oqronkit.errors import ConfigurationError
from oqronkit.worker.affinity import pin_worker

ROOT = Path(__file__).resolve().parents[2]
needs_affinity = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="CPU pinning needs Linux and at least two CPUs",
)

# A worker stand-in: pins like run_single, starts a thread afterwards, prints what it
# got and every thread's affinity, then holds its CPU until stdin closes.
HOLDER = textwrap.dedent("""
    import os, sys, threading
    from oqronkit.worker.affinity import pin_worker
    cpu = pin_worker("auto", lock_dir=sys.argv[1], slot=int(sys.argv[2]))
    threading.Thread(target=sys.stdin.read).start()
    masks = {tuple(sorted(os.sched_getaffinity(int(t)))) for t in os.listdir("/proc/self/task")}
    print(cpu, sorted(masks), flush=True)
""")


def start_holder(lock_dir: Path, slot: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock_dir), str(slot)], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


@needs_affinity
def test_workers_on_one_host_take_different_cpus_and_release_them_on_exit(tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    holders = []
    try:
        seen = []
        for _ in cpus:  # same slot each time: the lock, not the slot, keeps them apart
            proc, line = start_holder(tmp_path, 0)
            holders.append(proc)
            cpu, masks = line.split(" ", 1)
            assert masks == f"[({int(cpu)},)]", line  # every thread, the later one too
            seen.append(int(cpu))
        assert sorted(seen) == cpus
        extra, line = start_holder(tmp_path, 0)
        holders.append(extra)
        assert line.startswith("None "), line  # more workers than CPUs: the extra one floats
        # A worker that dies, however it dies, frees its CPU for the next one.
        holders[0].kill()
        holders[0].wait(10)
        again, line = start_holder(tmp_path, 0)
        holders.append(again)
        assert line.split(" ", 1)[0] == str(seen[0]), line
    finally:
        for proc in holders:
            proc.kill()
            proc.wait(10)


@needs_affinity
def test_the_supervisor_slot_chooses_the_first_cpu_tried(tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    proc, line = start_holder(tmp_path, 1)
    try:
        assert line.split(" ", 1)[0] == str(cpus[1 % len(cpus)]), line
    finally:
        proc.kill()
        proc.wait(10)


def test_off_never_pins(tmp_path):
    assert pin_worker("off", lock_dir=str(tmp_path)) is None
    assert list(tmp_path.iterdir()) == []


def test_the_setting_is_checked(monkeypatch):
    monkeypatch.delenv("OQRON_CPU_AFFINITY", raising=False)
    assert worker_environment().cpu_affinity == "auto"
    monkeypatch.setenv("OQRON_CPU_AFFINITY", "OFF")
    assert worker_environment().cpu_affinity == "off"
    assert worker_environment(cpu_affinity="auto").cpu_affinity == "auto"
    with pytest.raises(ConfigurationError, match="OQRON_CPU_AFFINITY must be one of auto, off"):
        worker_environment(cpu_affinity="fast")


def test_a_bad_setting_is_a_clear_cli_error_not_a_traceback(tmp_path):
    env = {**os.environ, "OQRON_MODE": "memory", "OQRON_CPU_AFFINITY": "fast", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "oqronkit", "worker", "--burst"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "error: OQRON_CPU_AFFINITY must be one of auto, off, got 'fast'." in done.stderr
    assert "Traceback" not in done.stderr

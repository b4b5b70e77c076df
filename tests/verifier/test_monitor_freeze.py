"""The runner held still while the reference is timed (verifier.monitor.freeze): a real spinning
process is stopped, burns no CPU inside the block, and runs on after it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from verifier.monitor.freeze import stopped

SPIN = "import threading\ndef spin():\n    while True: pass\nthreading.Thread(target=spin, daemon=True).start()\nspin()\n"


def _stat(pid: int) -> tuple[str, int]:
    """(state, user + system CPU ticks of the whole thread group)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0], int(fields[11]) + int(fields[12])


def test_a_spinning_process_and_its_threads_burn_nothing_while_stopped_and_run_after():
    proc = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        time.sleep(0.3)
        with stopped(proc.pid):
            state, before = _stat(proc.pid)  # the block starts once every thread has stopped
            time.sleep(0.5)
            assert state == "T" and _stat(proc.pid)[1] == before  # not one tick, in any thread
        deadline = time.monotonic() + 10  # spinning again: 10 ticks are 0.1 s of a core (a loaded machine: later)
        while _stat(proc.pid)[1] - before < 10 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _stat(proc.pid)[1] - before >= 10
    finally:
        proc.kill()
        proc.wait()


def test_a_process_already_gone_is_no_error():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with stopped(proc.pid):
        pass

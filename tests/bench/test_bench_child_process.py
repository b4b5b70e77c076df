"""The shared subprocess runner (kernelbench_npu.child_process): sessions, group kills, exit lines.
Real processes: a shell that leaves a grandchild behind, a Python that dies of SIGSEGV."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from kernelbench_npu.child_process import ChildProcess, run_to_end, status_line


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")  # a zombie waiting for its reaper is dead


def test_a_deadline_kills_the_tool_and_everything_it_started(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    done = run_to_end(["bash", "-c", f"sleep 300 & echo $! > {pid_file}; echo started; wait"], tmp_path,
                      timeout_s=1.0, env={"PATH": os.environ["PATH"]})
    assert done.timed_out and done.returncode == 124
    assert "started" in done.stdout and "timed out after 1 s" in done.stderr
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), "the background sleep outlived its tool's deadline"


def test_a_finished_tool_keeps_its_exit_code_and_output(tmp_path):
    done = run_to_end(["bash", "-c", "echo out; echo err >&2; exit 3"], tmp_path, 30, {"PATH": os.environ["PATH"]})
    assert (done.returncode, done.stdout, done.stderr, done.timed_out) == (3, "out\n", "err\n", False)


def test_a_tool_that_cannot_start_reads_like_a_shell_would(tmp_path):
    done = run_to_end([str(tmp_path / "no-such-tool")], tmp_path, 30, {})
    assert done.returncode == 127 and "no-such-tool: cannot execute" in done.stderr


def test_a_crash_becomes_one_line_naming_the_signal_and_its_meaning(tmp_path):
    child = ChildProcess([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
                         env={"PATH": os.environ["PATH"]}, cwd=tmp_path)
    assert child.exit_line(wait_s=30) == "killed by SIGSEGV: segmentation fault (invalid memory access)"
    assert status_line(3) == "exited with code 3"


def test_a_child_runs_in_its_own_session_and_a_kill_ends_it(tmp_path):
    child = ChildProcess(["sleep", "300"], env={"PATH": os.environ["PATH"]}, cwd=tmp_path)
    assert os.getsid(child.pid) == child.pid != os.getsid(0)
    assert child.exit_line(wait_s=0.2) == "stopped responding"
    child.kill()
    assert child.poll() == -9

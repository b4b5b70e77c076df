"""Runtime integrity, read by the monitor from outside the runner after every call.

- the observer page (verifier.sandbox.observer): forbidden ATen operators counted during a window of
  calls are torch compute in ``forward``; no operator counted at all, although the runner's own copy
  of the outputs into the arena is one, means the observer was switched off; a page without its magic
  was overwritten;
- the native call count the runner reports (a kernel that never calls its library is a decoy: a
  window of N calls makes at least N);
- the call's inputs in the runner's arena are unchanged (inputs are not mutated);
- the runner's OS threads, read from ``/proc/<pid>/status`` (no thread beyond the OpenMP pool
  outlives a call: work on a detached thread would finish after the monitor's clock stopped).

Each check returns "" or one line; the session turns a line into a failed hack gate.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from verifier.sandbox.observer import Observation, ObserverPage


def os_threads(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


class Watch:
    def __init__(self, page: ObserverPage, pid: int, threads: int, requires_native: bool, base_threads: int = 0) -> None:
        self.page, self.pid, self.threads, self.requires_native = page, pid, threads, requires_native
        self.last = page.read()
        self.base_threads = base_threads or os_threads(pid)  # counted before the candidate's code ran

    def after_call(self, native_calls: int, calls: int = 1) -> str:
        """After a window of ``calls`` calls (the observer and the native count cover all of them)."""
        now: Observation = self.page.read()
        before, self.last = self.last, now
        if not now.valid:
            return "the runtime observer's page was overwritten"
        if now.forbidden > before.forbidden:
            names = ", ".join(dict.fromkeys(now.names[before.forbidden:] or now.names)) or "aten operators"
            return f"torch compute observed in forward: {names}"
        if not now.armed or now.total <= before.total:
            return "the runtime observer saw no operator during a call (it was switched off)"
        if self.requires_native and native_calls < calls:
            return "forward made no native call (the native kernel never ran)"
        return ""

    def thread_problem(self, phase: str) -> str:
        count = os_threads(self.pid)
        allowed = self.base_threads + self.threads
        if count > allowed:
            return f"{count} OS threads after {phase}, at most {allowed} allowed (no threads beyond the OpenMP pool)"
        return ""


def inputs_changed(runner_arena, reference_arena, span: int) -> bool:
    """The runner's copy of a call's inputs differs from the reference worker's (never given to the candidate).
    Compared as 8-byte words in place (slicing the maps copied both, 12x slower: 47 ms for 32 MiB)."""
    words = span // 8
    mine, theirs = (np.frombuffer(a.map, np.uint64, words) for a in (runner_arena, reference_arena))
    return not np.array_equal(mine, theirs) or runner_arena.map[words * 8:span] != reference_arena.map[words * 8:span]

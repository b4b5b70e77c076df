"""Closing a finished verification's arenas off the verdict's path (monitor side).

Unmapping a verification's arenas and closing their memory files frees every page its windows held:
0.09-0.19 s for a ReLU or a softmax at a quarter of the bundled sizes (``benchmarks/verify_speed``), which
is most of what closing a session cost and none of what its verdict says. :data:`REAPER` does it on a
thread of its own once the verdict is made: a campaign's next LLM call, or the next verification's start,
runs meanwhile. A latency phase waits for it first (:meth:`Reaper.drain`), so that no freeing shares the
CPUs or the memory with a timed window. The thread is not a daemon: a process that ends waits for it.
"""

from __future__ import annotations

import threading
from typing import Callable


class Reaper:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def later(self, closers: list[Callable[[], None]]) -> None:
        """Run ``closers`` on a thread of their own (each one whatever the others raise)."""
        if not closers:
            return
        thread = threading.Thread(target=_close_all, args=(closers,), name="evokernel-reaper")
        with self._lock:  # started before a concurrent drain() can see it (joining an unstarted thread raises)
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
            thread.start()

    def drain(self) -> None:
        """Wait until everything handed to :meth:`later` so far is closed."""
        with self._lock:
            pending, self._threads = self._threads, []
        for thread in pending:
            thread.join()

    def pending(self) -> int:
        with self._lock:
            return sum(t.is_alive() for t in self._threads)


def _close_all(closers: list[Callable[[], None]]) -> None:
    for close in closers:
        try:
            close()
        except Exception:  # noqa: BLE001 - an arena that cannot be closed now goes with the process
            pass


REAPER = Reaper()

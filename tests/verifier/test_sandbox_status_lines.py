"""A launcher's status pipe read from two threads at once (verifier.sandbox.spawn.StatusLines): a reference
worker's reader thread asks for the exit status when its channel ends while the thread that killed the worker
waits for it; neither may find the pipe closed under it."""

from __future__ import annotations

import os
import threading

from verifier.sandbox.spawn import StatusLines


def test_threads_reading_the_exit_status_at_once_all_get_it_and_none_a_closed_descriptor():
    errors, statuses = [], []
    for _ in range(200):  # without the lock: hundreds of "Bad file descriptor" and some statuses lost
        read, write = os.pipe()
        os.write(write, b'{"pid": 5}\n{"exit": 3}\n')
        os.close(write)
        lines, start = StatusLines(read), threading.Barrier(6)

        def ask() -> None:
            start.wait()
            try:
                statuses.append(lines.exit_status())
            except OSError as exc:
                errors.append(exc)

        threads = [threading.Thread(target=ask) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert lines.first(0.1) == '{"pid": 5}'
    assert errors == [] and statuses == [3] * 1200

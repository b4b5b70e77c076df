"""What the xdist workers of one test run share: a directory, and "make this once per run".

Import from any test directory (tests/ is on sys.path): ``from run_shared import once_per_run``.
"""

from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def run_shared_dir(tmp_path_factory) -> Path:
    """A directory every xdist worker of this test run shares (the parent of the workers' own
    temporary roots; without xdist, the session's root). New for each run."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    shared.mkdir(exist_ok=True)
    return shared


def once_per_run(tmp_path_factory, name: str, make: Callable[[Path], T]) -> T:
    """``make(path)`` run once per test run for ``name``: the first worker to ask makes it (into
    ``path``, under :func:`run_shared_dir`), a worker asking meanwhile waits for it, and every later
    call returns the first one's value (pickled). A ``make`` that raises is retried by the next call."""
    shared = run_shared_dir(tmp_path_factory)
    done = shared / f"{name}.pickle"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return pickle.loads(done.read_bytes())
        value = make(shared / name)
        done.write_bytes(pickle.dumps(value))
        return value

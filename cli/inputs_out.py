"""Checks of the paths a command writes (``--out``, ``--report``), run before any work, and the one
line for a write that fails anyway (a read-only file system, a disk that filled up meanwhile).

- a file (``lake export --out``, ``lake query --out``): its directory must exist (a typo in it is
  not silently created) and be writable, and the path must not be a directory;
- a directory a command fills (``build --out``, ``report --out``, ``experiment --out``, ``campaign
  --report``, ``demo --out``): it is created with its parents, so the nearest part of the path that
  exists must be a directory this process may write in, and the path itself, when it exists, a
  directory.

Remote URLs (``s3://...``, written through fsspec) are not checked here: their store answers.
Root passes every permission check (``os.access``), so the write itself is guarded too:
:func:`write_failed` is the one line for its OSError.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from cli.inputs import InputError


def output_file(path: Path | str, flag: str = "--out") -> None:
    """A file the command writes: in an existing, writable directory, and not a directory itself."""
    if "://" in str(path):
        return
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{flag} {path}: is a directory; give the file to write")
    parent = path.parent
    if not parent.exists():
        raise InputError(f"{flag} {path}: directory {parent} does not exist (create it first)")
    if not parent.is_dir():
        raise InputError(f"{flag} {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {path}: directory {parent} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"{flag} {path}: the file exists and is not writable")


def output_dir(path: Path | str, flag: str = "--out", holds: str = "the output") -> None:
    """A directory the command creates (with its parents) or fills: ``holds`` says what goes in it."""
    if "://" in str(path):
        return
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{flag} {path}: is a file; {holds} is a directory")
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is None:
        return
    if not existing.is_dir():
        raise InputError(f"{flag} {path}: {existing} is a file, so the directory cannot be made")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {path}: directory {existing} is not writable")


def write_failed(flag: str, path: Path | str, exc: OSError) -> str:
    """One line for a write that failed although the checks passed (e.g. root on a read-only mount)."""
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.EPERM, errno.EACCES, errno.EROFS):
        reason += " (the directory is read-only)"
    return f"{flag} {path}: cannot write it: {reason}"

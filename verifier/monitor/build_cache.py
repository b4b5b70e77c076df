"""Built libraries shared across verifications, written and read only by the monitor.

An entry is what one build job produced (verifier.backends.base.BuildJob), under the job's key: the
hash of everything the build read (sources, validated flags, compiler, torch), computed by the
monitor from what it asked the builder to build, never from anything a sandbox process said. Each
entry holds the library and the monitor's own record of the build (the units the policy checks read,
the compile note), with a manifest of their hashes: an entry whose bytes do not match it is dropped
and rebuilt. No sandbox process can reach the cache: builders write their own fresh directory, and
the runner loads copies the monitor placed in a directory only the monitor writes.

Layout: ``<root>/builds/<key[:2]>/<key>/MANIFEST.json`` plus ``files/<name>``; publication is an
atomic rename of a staged directory, so concurrent verifications never see half an entry. A build in
progress holds ``<root>/build-locks/<key>.lock`` (:meth:`BuildCache.building`): a second verification of
the same sources (a resubmitted candidate, a parallel task, another process on the same cache) waits for it
and reads its entry instead of compiling the same thing at the same time (a torch extension: ~25 s of CPU).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

MAX_FILE_BYTES = 1 << 30
MANIFEST = "MANIFEST.json"
LOCK_POLL_S = 0.1
_KEY = re.compile(r"[0-9a-f]{16,128}")
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def read_regular(path: Path, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of a regular file, never following a link; None for anything else or anything larger."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class BuildCache:
    def __init__(self, root: Path) -> None:
        self.root = Path(root) / "builds"
        self.locks = Path(root) / "build-locks"

    def _dir(self, key: str) -> Path:
        if not _KEY.fullmatch(key):
            raise ValueError(f"not a build key: {key!r}")
        return self.root / key[:2] / key

    def get(self, key: str) -> dict[str, bytes] | None:
        """Every file of the entry, or None (missing, or damaged: then removed)."""
        where = self._dir(key)
        raw = read_regular(where / MANIFEST)
        if raw is None:
            return None
        try:
            manifest = json.loads(raw)
            files = manifest["files"]
            assert manifest["key"] == key and isinstance(files, dict) and files
        except (ValueError, KeyError, TypeError, AssertionError):
            shutil.rmtree(where, ignore_errors=True)
            return None
        contents = {}
        for name, digest in files.items():
            data = read_regular(where / "files" / name) if _NAME.fullmatch(str(name)) else None
            if data is None or hashlib.sha256(data).hexdigest() != digest:
                shutil.rmtree(where, ignore_errors=True)
                return None
            contents[name] = data
        return contents

    @contextmanager
    def building(self, key: str, wait_s: float) -> Iterator[bool]:
        """Held while this process builds ``key``; entered once no other build of it is in progress (True),
        or after ``wait_s`` without the lock (False: the caller builds anyway, as it would without a lock).
        The lock is an ``flock`` on a file of its own, so a builder that dies releases it."""
        self._dir(key)  # validates the key
        self.locks.mkdir(parents=True, exist_ok=True)
        with open(self.locks / f"{key}.lock", "a") as handle:
            held = _flock_within(handle, wait_s)
            try:
                yield held
            finally:
                if held:
                    fcntl.flock(handle, fcntl.LOCK_UN)

    def put(self, key: str, contents: dict[str, bytes]) -> bool:
        """Publish an entry (atomic); False if another verification published it first or it failed."""
        final = self._dir(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = final.parent / f".staging-{secrets.token_hex(8)}"
        try:
            (staging / "files").mkdir(parents=True)
            for name, data in contents.items():
                if not _NAME.fullmatch(name):
                    raise ValueError(f"not a file name: {name!r}")
                (staging / "files" / name).write_bytes(data)
            manifest = {"key": key, "files": {n: hashlib.sha256(d).hexdigest() for n, d in contents.items()}}
            (staging / MANIFEST).write_text(json.dumps(manifest))
            if final.exists() and self.get(key) is None:
                shutil.rmtree(final, ignore_errors=True)
            os.rename(staging, final)
            return True
        except OSError:
            return False
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _flock_within(handle, wait_s: float) -> bool:
    """An exclusive ``flock`` on ``handle``, tried until ``wait_s`` has passed; whether it was taken."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(LOCK_POLL_S)

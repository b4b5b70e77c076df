"""The compile cache: built libraries shared across verifications, written only by the trusted
parent and checked by content hash on the way in and on the way out.

A sandbox child never sees the cache. It builds in its private build directory; right after the
build, before any candidate code runs in it, it hashes what it built (:func:`hash_artifacts`) and
reports the hashes over its channel. After the verification the parent copies each new entry out
of the private directory (:meth:`CompileCache.ingest`), hashing the bytes it copies: a file the
candidate replaced, or turned into a link, after the report no longer matches and is not cached.
Before the next verification, the parent copies the entries its candidate needs into the new
private directory (:meth:`CompileCache.seed`), again only if every byte matches the manifest, so
nothing a candidate wrote can reach another candidate.

Layout: ``<root>/entries/<id[:2]>/<id>/MANIFEST.json`` plus ``files/<relative path>``, where
``id = sha256(key, path)``; ``key`` is the content hash of the build inputs (source, flags,
compiler, target), ``path`` where the backend expects the entry under its build directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

MAX_FILE_BYTES = 1 << 30
MANIFEST = "MANIFEST.json"


@dataclass(frozen=True)
class CacheEntry:
    key: str  # content hash of everything the build read
    path: str  # relative path (file or directory) under the build directory

    @property
    def entry_id(self) -> str:
        return hashlib.sha256(f"{self.key}\0{self.path}".encode()).hexdigest()

    def covers(self, relpath: str) -> bool:
        return relpath == self.path or relpath.startswith(self.path.rstrip("/") + "/")


def _read_regular(path: Path) -> bytes | None:
    """The bytes of a regular file, never following a link; None for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def hash_artifacts(build_dir: Path, artifacts: Iterable[str]) -> dict[str, str]:
    """{relative path: sha256} of every regular file of ``artifacts`` (files or directories under
    ``build_dir``), for the compile report. Links and files outside build_dir are skipped."""
    root = Path(build_dir)
    hashes: dict[str, str] = {}
    for artifact in artifacts:
        base = Path(artifact)
        files = [base] if not base.is_dir() else [Path(d) / f for d, _, names in os.walk(base) for f in names]
        for file in files:
            try:
                rel = file.relative_to(root) if file.is_absolute() else file
            except ValueError:
                continue
            data = _read_regular(root / rel) if ".." not in rel.parts else None
            if data is not None:
                hashes[rel.as_posix()] = hashlib.sha256(data).hexdigest()
    return hashes


class CompileCache:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.entries = self.root / "entries"

    def _dir(self, entry: CacheEntry) -> Path:
        return self.entries / entry.entry_id[:2] / entry.entry_id

    def _manifest(self, entry: CacheEntry) -> dict[str, str] | None:
        data = _read_regular(self._dir(entry) / MANIFEST)
        try:
            manifest = json.loads(data) if data is not None else None
        except ValueError:
            return None
        if not isinstance(manifest, dict) or manifest.get("path") != entry.path:
            return None
        files = manifest.get("files")
        return files if isinstance(files, dict) and files and all(entry.covers(p) for p in files) else None

    def seed(self, entries: Iterable[CacheEntry], build_dir: Path) -> list[CacheEntry]:
        """Copy every intact cached entry into ``build_dir``; returns the entries copied."""
        hits = []
        for entry in entries:
            files = self._manifest(entry)
            if files is None:
                continue
            contents = {rel: _read_regular(self._dir(entry) / "files" / rel) for rel in files}
            if any(data is None or hashlib.sha256(data).hexdigest() != files[rel] for rel, data in contents.items()):
                shutil.rmtree(self._dir(entry), ignore_errors=True)  # damaged: the child rebuilds, ingest replaces
                continue
            for rel, data in contents.items():
                target = Path(build_dir) / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            hits.append(entry)
        return hits

    def ingest(self, entries: Iterable[CacheEntry], build_dir: Path, reported: Mapping[str, str]) -> list[CacheEntry]:
        """Publish each entry whose files in ``build_dir`` still match the hashes the child reported
        before any candidate code ran; returns the entries published."""
        published = []
        for entry in entries:
            files = {rel: digest for rel, digest in reported.items() if isinstance(rel, str) and entry.covers(rel)}
            if not files or ".." in Path(entry.path).parts or self._manifest(entry) is not None:
                continue
            contents = {rel: _read_regular(Path(build_dir) / rel) for rel in files}
            if any(data is None or hashlib.sha256(data).hexdigest() != files[rel] for rel, data in contents.items()):
                continue  # changed after the report: never cached
            if self._publish(entry, contents, files):
                published.append(entry)
        return published

    def _publish(self, entry: CacheEntry, contents: dict[str, bytes], files: dict[str, str]) -> bool:
        self.entries.mkdir(parents=True, exist_ok=True)
        staging = self.entries / f".staging-{secrets.token_hex(8)}"
        try:
            for rel, data in contents.items():
                target = staging / "files" / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            (staging / MANIFEST).write_text(json.dumps({"key": entry.key, "path": entry.path, "files": files}))
            final = self._dir(entry)
            final.parent.mkdir(exist_ok=True)
            if final.exists() and self._manifest(entry) is None:
                shutil.rmtree(final, ignore_errors=True)  # an unreadable leftover
            os.rename(staging, final)  # atomic; fails if another verification published it first
            return True
        except OSError:
            return False
        finally:
            shutil.rmtree(staging, ignore_errors=True)

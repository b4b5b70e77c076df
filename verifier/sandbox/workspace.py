"""The private directories of one verification and their exchange with the compile cache.

``<tmp>/evokernel-verify-XXXX/`` (mode 0711: a sandbox uid may pass through, not list it) holds
``child/`` (the candidate child's working directory; ``child/build`` is its build directory) and
``reference/`` (the reference worker's, read-only to it). Before the sandbox starts, the cached
entries the candidate needs are copied into ``child/build``; afterwards the new entries whose
bytes still match the child's compile report go into the cache (both checked by content hash,
see :mod:`verifier.sandbox.compile_cache`) and the directory is removed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from verifier.sandbox.compile_cache import CacheEntry, CompileCache
from verifier.sandbox.messages import CompileReport


@dataclass
class Workspace:
    root: Path
    cache: CompileCache
    entries: tuple[CacheEntry, ...] = ()
    hits: list[CacheEntry] = field(default_factory=list)

    @classmethod
    def create(cls, cache_dir: Path, entries: tuple[CacheEntry, ...] = ()) -> "Workspace":
        root = Path(tempfile.mkdtemp(prefix="evokernel-verify-"))
        os.chmod(root, 0o711)
        workspace = cls(root, CompileCache(cache_dir), tuple(entries))
        workspace.build_dir.mkdir(parents=True)
        if entries:
            workspace.hits = workspace.cache.seed(entries, workspace.build_dir)
        return workspace

    @property
    def build_dir(self) -> Path:
        return self.root / "child" / "build"

    def close(self, compile_report: CompileReport | None = None) -> list[CacheEntry]:
        """Cache the new entries the child built (as it reported them), then remove everything."""
        try:
            new = [e for e in self.entries if e not in self.hits]
            if new and compile_report is not None and compile_report.ok and compile_report.artifacts:
                return self.cache.ingest(new, self.build_dir, dict(compile_report.artifacts))
            return []
        finally:
            remove_tree(self.root)


def remove_tree(root: Path) -> None:
    """Remove a verification's directory, including what its sandbox made unreadable (chmod 000)."""

    def unlock(func, path, _exc) -> None:
        try:
            os.chmod(os.path.dirname(path), 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)
            func(path)
        except OSError:
            pass

    shutil.rmtree(root, onerror=unlock)

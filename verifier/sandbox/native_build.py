"""The verifier's own native helpers built once per machine into the cache: the runner's op observer
(verifier.sandbox.observer), the builder's hidden-path shim (verifier.sandbox.hidden_paths) and the
timed inputs' fill (verifier.sandbox.fast_fill). Each caller names its target (a directory keyed by
what the library is built from) and its compiler command; this module owns where they live (the user's
cache, :func:`machine_root`, not a verification's: a test run or a user with many verifier caches
builds each once) and the build itself: a target
already there is used as it is, a new one is compiled in a temporary directory beside it and moved into
place in one rename, so two processes building the same key at once lose nothing and a failed build
leaves nothing behind.
"""

from __future__ import annotations

import fcntl
import functools
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from verifier.settings import user_cache


def machine_root(fallback: Path) -> Path:
    """Where the native helpers are built: ``$XDG_CACHE_HOME/evokernel/native`` (``~/.cache`` without it),
    or ``fallback`` (a verifier cache) where that cannot be created or written."""
    root = user_cache("native")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return Path(fallback)
    return root if os.access(root, os.W_OK | os.X_OK) else Path(fallback)


@functools.lru_cache(maxsize=None)
def compiler_version(compiler: str) -> str:
    """What ``compiler --version`` prints (part of a library's key: a new compiler builds it again); asked once
    per process (every reference worker's start asks for the fill library's key)."""
    return subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout


def build_once(target: Path, argv_for: Callable[[Path], list[str]], what: str, timeout_s: float,
               link_for: Callable[[Path, Path], list[str]] | None = None) -> tuple[Path | None, str]:
    """(``target``, "") once it is built, or (None, why not: one line naming ``what``). ``argv_for(out)``
    is the compiler command that writes the library to ``out``; with ``link_for``, ``argv_for(obj)`` writes
    an object and ``link_for(obj, out)`` links the library from it (compiling and linking apart: a library
    compiled with -ffast-math must not link GCC's crtfastmath.o, whose constructor turns on flush-to-zero
    and denormals-are-zero for the whole process that loads it). Two builders of one key (two verifications
    starting at once, in threads or processes) compile it once: the second waits on the key's lock, beside
    its directory, and finds the target there."""
    if target.is_file():
        return target, ""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target.parent.parent / f".{target.parent.name}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # held for one compile at most (its timeout)
            if target.is_file():
                return target, ""
            with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
                out = Path(tmp) / target.name
                obj = out.with_suffix(".o")
                for argv in [argv_for(out)] if link_for is None else [argv_for(obj), link_for(obj, out)]:
                    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
                    if proc.returncode != 0:
                        return None, f"building {what} failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1][:200]
                os.chmod(out, 0o755)
                os.replace(out, target)  # atomic: a reader never sees half a library
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"building {what} failed: {exc}"
    return target, ""

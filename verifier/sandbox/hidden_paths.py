"""The confined builder's compilers see a forbidden path as a missing one (native/hidden_paths.c).

Landlock refuses a read outside the builder's rules with EACCES while a path that does not exist gives
ENOENT, and a compiler tells the two apart in its diagnostics ("Permission denied") and in
``__has_include`` (an error rather than false): a candidate's ``#include </some/path>`` would learn which
hidden paths exist. The monitor builds this small preload library once per machine into its cache
(:func:`library`) and hands each builder a copy in its own directory (:func:`preload_env`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from verifier.sandbox import native_build

SOURCE = Path(__file__).resolve().parent / "native" / "hidden_paths.c"
NAME = "hidden_paths.so"


def library(cache_root: Path, timeout_s: float = 120.0) -> Path | None:
    """The built library (None where no C compiler can build it: builds then run without it)."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        return None
    key = hashlib.sha256(SOURCE.read_bytes() + compiler.encode()).hexdigest()[:24]
    target, _why = native_build.build_once(Path(cache_root) / "hidden_paths" / key / NAME,
                                           lambda out: [compiler, "-O2", "-fPIC", "-shared", "-w", str(SOURCE), "-o",
                                                        str(out), "-ldl"], "the hidden-path shim", timeout_s)
    return target


def preload_env(lib: Path | None, work: Path) -> dict[str, str]:
    """``LD_PRELOAD`` of a copy of ``lib`` in the builder's directory (which its rules let it read)."""
    if lib is None:
        return {}
    copy = Path(work) / f".{NAME}"
    shutil.copyfile(lib, copy)
    os.chmod(copy, 0o555)
    return {"LD_PRELOAD": str(copy)}

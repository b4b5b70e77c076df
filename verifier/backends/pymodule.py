"""Importing a candidate's Python code from a real file in build_dir (sandbox side only).

Triton's ``@triton.jit`` needs the source on disk and torch's ``load_inline`` caches by file, so
backends write the candidate to ``build_dir`` and import it under a unique module name instead
of exec'ing a string. The parent process never calls this.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def candidate_path(candidate_source: str, build_dir: Path, stem: str) -> Path:
    """Where :func:`import_candidate` writes this source (its module name is the file's stem)."""
    digest = hashlib.sha256(candidate_source.encode()).hexdigest()[:16]
    return build_dir / f"evokernel_candidate_{stem}_{digest}.py"


def import_candidate(candidate_source: str, build_dir: Path, stem: str) -> ModuleType:
    """Write the candidate to build_dir/<stem>_<hash>.py and import it as a fresh module."""
    path = candidate_path(candidate_source, build_dir, stem)
    module_name = path.stem
    build_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(candidate_source)
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def model_new_class(module: ModuleType, backend: str) -> type:
    model = getattr(module, "ModelNew", None)
    if not isinstance(model, type):
        raise TypeError(f"{backend}: the candidate defines no class ModelNew")
    return model

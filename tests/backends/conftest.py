"""Fixtures of the backend tests: one verifier cache per session, so the slow nvcc compile of the
CUDA scaffold example (torch headers, ~80-110 s here) happens once and is reused by every test
that compiles or verifies it (the cache is keyed by source hash)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def xdg_cache(tmp_path_factory):
    """An XDG_CACHE_HOME whose verifier cache is :func:`verifier_cache` (for the CLI tests)."""
    return tmp_path_factory.mktemp("xdg")


@pytest.fixture(scope="session")
def verifier_cache(xdg_cache):
    path = xdg_cache / "evokernel" / "verifier"
    path.mkdir(parents=True, exist_ok=True)
    return path

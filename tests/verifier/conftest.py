"""Fixtures of the verifier tests: one compile cache per test run, shared by the xdist workers (its
entries appear by atomic rename, so concurrent verifications never see half of one)."""

from __future__ import annotations

import pytest

from run_shared import run_shared_dir


@pytest.fixture(scope="session")
def verify_cache(tmp_path_factory):
    """The run's verifier cache: the same directory as tests/backends' ``verifier_cache`` (one
    XDG_CACHE_HOME-like tree per run), so the native observer and a kernel both suites build are
    compiled once."""
    path = run_shared_dir(tmp_path_factory) / "xdg" / "evokernel" / "verifier"
    path.mkdir(parents=True, exist_ok=True)
    return path

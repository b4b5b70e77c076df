"""Fixtures of the verifier tests: one compile cache per test run, shared by the xdist workers (its
entries appear by atomic rename, so concurrent verifications never see half of one)."""

from __future__ import annotations

import pytest

from run_shared import run_shared_dir


@pytest.fixture(scope="session")
def verify_cache(tmp_path_factory):
    path = run_shared_dir(tmp_path_factory) / "verify-cache"
    path.mkdir(exist_ok=True)
    return path

"""Fixtures of the verifier tests: one compile cache per test session (per xdist worker)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def verify_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("verify-cache")

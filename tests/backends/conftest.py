"""Fixtures of the backend tests: one verifier cache per test run, so the slow nvcc compile of the
CUDA scaffold example (torch headers, ~80-110 s here) happens once and is reused by every test
that compiles or verifies it (the cache is keyed by source hash)."""

from __future__ import annotations

import pytest

from run_shared import run_shared_dir


@pytest.fixture(scope="session")
def xdg_cache(tmp_path_factory):
    """An XDG_CACHE_HOME whose verifier cache is :func:`verifier_cache` (for the CLI tests); one per
    test run, shared by the xdist workers."""
    path = run_shared_dir(tmp_path_factory) / "xdg"  # its verifier cache is tests/verifier's verify_cache
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def verifier_cache(xdg_cache):
    path = xdg_cache / "evokernel" / "verifier"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def triton_ascend():
    """The triton-ascend toolchain in the user cache, installed when missing (~700 MB from PyPI,
    15-60 s). Skips only when the install itself is impossible here (no PyPI)."""
    from verifier.backends.triton_ascend.toolchain import locate
    from verifier.toolchains import ToolchainError, install

    try:
        return locate()
    except ToolchainError:
        pass
    try:
        install("triton-ascend", force=True)
    except ToolchainError as exc:
        pytest.skip(f"the triton-ascend toolchain cannot be installed here: {exc}")
    return locate()

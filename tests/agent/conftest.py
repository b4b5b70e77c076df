"""Fixtures of the agent tests: a tiny real build shared by the run."""

from __future__ import annotations

import pytest

from agent_fixtures import build_tiny
from run_shared import once_per_run


@pytest.fixture(scope="session")
def tiny_build(tmp_path_factory):
    """Two small ReLU tasks built for the cpu backend, once per test run (shared by the workers)."""
    from kernelbench_npu.spec import load_build

    return load_build(once_per_run(tmp_path_factory, "agent-tiny-build", lambda root: build_tiny("cpu", root).root))

from __future__ import annotations

import pytest

from kernelbench_npu.build import build_benchmark
from kernelbench_npu.spec import load_build
from agent_fixtures import write_problems


@pytest.fixture(scope="session")
def tiny_build(tmp_path_factory):
    """A CPU build of two small ReLU tasks (built and linted for real)."""
    root = tmp_path_factory.mktemp("agent-build")
    summary = build_benchmark("cpu", sources=[write_problems(root / "src")], levels=(1,), out=root / "build",
                              include_bundled=False)
    assert summary.ok == 2, summary
    return load_build(root / "build")

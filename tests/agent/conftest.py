from __future__ import annotations

import pytest

from agent_fixtures import build_tiny


@pytest.fixture(scope="session")
def tiny_build(tmp_path_factory):
    return build_tiny("cpu", tmp_path_factory.mktemp("agent-build"))

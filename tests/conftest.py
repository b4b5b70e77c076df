"""Shared test setup: hermetic Prefect and temp dirs, GPU marker handling."""

from __future__ import annotations

import os
import shutil
import tempfile

# Prefect writes ~/.prefect on import and phones home unless told not to: keep tests hermetic.
_PREFECT_HOME = tempfile.mkdtemp(prefix="evokernel-test-prefect-")
os.environ.setdefault("PREFECT_HOME", _PREFECT_HOME)
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_UI_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_TO_API_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
for _key in [k for k in os.environ if k.startswith("EVOKERNEL_")]:
    del os.environ[_key]

import pytest  # noqa: E402
from hypothesis import settings as hypothesis_settings  # noqa: E402

# Property tests check properties, not speed: no per-example deadline (a loaded CI machine made
# 0.1 ms examples take 360 ms once and fail). Speed targets live in benchmarks/.
hypothesis_settings.register_profile("evokernel", deadline=None)
hypothesis_settings.load_profile("evokernel")


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (none on this machine; CI never has one)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_PREFECT_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def prefect_harness():
    """One Prefect test server per test session (it costs ~15 s to start): use in flow tests."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield

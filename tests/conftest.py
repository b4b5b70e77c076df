"""Shared test setup: hermetic Prefect and temp dirs, GPU marker handling, and what tests share.

The suite runs on two xdist workers (``make test``: ``-n 2 --dist loadscope``, see the Makefile). What is expensive to
make is made once per run, not once per test or per worker, by these fixtures (use them rather than
building your own; add yours the same way, with ``once_per_run``):

- ``bundled_cpu_build`` (session): the demo's build, every bundled problem in the cpu variant
  (45 s quiet, minutes loaded), built once per run whichever worker asks first; the other waits and
  reuses it. Returns ``(BuildSummary, build directory)``; treat the directory as read-only.
- ``verify_cache`` (tests/verifier), ``xdg_cache``/``verifier_cache`` (tests/backends): one compile
  cache per run (the same directory for both suites), shared by both workers (the caches are safe for concurrent use: entries appear by
  atomic rename), so a torch extension, an nvcc build or the native observer is compiled once.
- ``kb_build`` (tests/cli), ``tiny_build`` (tests/agent): small real builds, once per run.
- ``prefect_harness`` (session): one Prefect test server per worker (~15 s to start).
- ``run_shared.run_shared_dir`` / ``run_shared.once_per_run`` (tests/run_shared.py): the directory
  both workers of this run share, and "make this once per run" for a new expensive fixture (its
  value is pickled for the other worker).

How tests are spread over the workers is tests/scheduling.py's: each module runs whole on one
worker (so a module-scoped fixture is made once), and the modules in ``scheduling.SLOW_FIRST`` are
handed out first so the two workers finish together (put a new module that takes minutes there).
"""

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
from run_shared import once_per_run  # noqa: E402
from scheduling import slowest_first  # noqa: E402
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
    slowest_first(items)
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


@pytest.fixture(scope="session")
def bundled_cpu_build(tmp_path_factory):
    """The demo's build: every bundled problem, cpu variant (~45 s quiet), built once per run for the
    tests that need it: (BuildSummary, build directory)."""
    from kernelbench_npu.build import build_benchmark

    return once_per_run(tmp_path_factory, "bundled-build-cpu", lambda out: (build_benchmark("cpu", out=out), out))


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
import subprocess
import sys
import tempfile
from pathlib import Path

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
# Campaigns started by tests (in process or as CLI processes, which inherit this) time kernels the way
# the verifier's own tests do (VerifySettings.for_tests: 5 rounds, 2 ms windows): they test what a
# campaign does with a verdict, not the figure (tests/verifier and benchmarks/ time with the defaults).
# A test's config file or option still wins over these.
os.environ["EVOKERNEL_LATENCY_ROUNDS"] = "5"
os.environ["EVOKERNEL_LATENCY_WINDOW_MS"] = "2"

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


_SMALLEST_SUBNORMAL, _ONE = 5e-324, 1.0  # names, not literals: the product is computed, never folded
_FLUSH_REPORTED: list[str] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Fails the test after which this process flushes subnormals to zero (MXCSR's FTZ/DAZ, as GCC's
    crtfastmath.o sets them in any process that loads a library linked with -ffast-math): every later test
    in the worker computes with them flushed, and hypothesis refuses to draw floats there."""
    result = yield
    if not _FLUSH_REPORTED and _SMALLEST_SUBNORMAL * _ONE == 0.0:
        _FLUSH_REPORTED.append(item.nodeid)
        raise AssertionError(f"{item.nodeid} left this process flushing subnormal floats to zero (a library "
                             "linked with -ffast-math, whose crtfastmath.o sets FTZ/DAZ?)")
    return result


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_PREFECT_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def prefect_harness():
    """One Prefect test server per test session (it costs ~15 s to start): use in flow tests."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


def _migrate_prefect_db(home: Path) -> Path:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PREFECT_HOME"] = str(home)
    subprocess.run([sys.executable, "-m", "prefect", "server", "database", "upgrade", "-y"], env=env, check=True,
                   capture_output=True, timeout=600)
    return home / "prefect.db"


@pytest.fixture(scope="session")
def migrated_prefect_db(tmp_path_factory) -> Path:
    """Prefect's SQLite database with every migration applied (``prefect server database upgrade``,
    ~8 s), made once per run: every fresh PREFECT_HOME otherwise runs each migration again when its
    campaign starts the temporary server (~9 s to the server's first answer instead of ~4 s, quiet)."""
    return once_per_run(tmp_path_factory, "prefect-db", _migrate_prefect_db)


@pytest.fixture
def prefect_home(tmp_path, migrated_prefect_db) -> Path:
    """``tmp_path / "prefect"``, a PREFECT_HOME holding a copy of the migrated database: for tests whose
    CLI campaigns start a temporary Prefect server there (a test that checks nothing was started there
    must not ask for it)."""
    home = tmp_path / "prefect"
    home.mkdir()
    shutil.copyfile(migrated_prefect_db, home / "prefect.db")
    return home


@pytest.fixture(scope="session")
def bundled_cpu_build(tmp_path_factory):
    """The demo's build: every bundled problem, cpu variant (~45 s quiet), built once per run for the
    tests that need it: (BuildSummary, build directory)."""
    from kernelbench_npu.build import build_benchmark

    return once_per_run(tmp_path_factory, "bundled-build-cpu", lambda out: (build_benchmark("cpu", out=out), out))


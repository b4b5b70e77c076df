"""The escape corpus (escape_corpus.py) through the real verifier: no candidate changes a byte
outside its own directory, creates a file there, reaches a loopback server, or reads a secret
into its verdict.

Containment is shown with every static check switched off, so the run-time isolation alone must
hold (Landlock, seccomp, privileges); the full policy is then checked tier by tier in-process
(tokens before preprocessing, the build checks after it), and end to end for a few cases. The
targets: a benchmark build, a memory lake, the compile cache of an honest verification, another
verification's directory, the user's credentials, a file in this project's package, and a
process standing in for the campaign (its argv and environment hold a secret).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from escape_corpus import CASES, EscapeCase
from verifier_taskutil import FIXTURES, fixture_task

from verifier.api import verify
from verifier.backends.cpu import CpuBackend
from verifier.gates.hack import static_findings
from verifier.gates.hack_build import check_units
from verifier.gates.hack_native import NATIVE_CHECKS
from verifier.gates.hack_python import CHECKS
from verifier.gates.native_symbols import SYMBOL_CHECKS
from verifier.sandbox import isolation, landlock, seccomp
from verifier.sandbox.workspace import Workspace
from verifier.settings import VerifySettings

pytestmark = pytest.mark.skipif(not (landlock.abi_version()[0] and seccomp.supported()),
                                reason="needs Landlock and the x86_64 seccomp filter")
ROOT = Path(__file__).resolve().parents[2]
ALL_STATIC = tuple(dict.fromkeys((*CHECKS, *NATIVE_CHECKS, *SYMBOL_CHECKS)))
HONEST = (FIXTURES / "honest_relu_omp.py").read_text()


@dataclass
class World:
    fill: dict[str, str]
    roots: list[Path]  # every file below these must keep its bytes, mode and modification time
    absent: list[Path]  # must not come into existence
    marker: str
    accepted: list
    cache: Path

    def snapshot(self) -> dict[str, str]:
        """{path: "sha256 mode mtime"} of every target file."""
        files = {}
        for root in self.roots:
            paths = [root] if root.is_file() else [Path(d) / f for d, _, names in os.walk(root) for f in names]
            for path in paths:
                info = path.stat()
                files[str(path)] = f"{hashlib.sha256(path.read_bytes()).hexdigest()} {info.st_mode:o} {info.st_mtime_ns}"
        return files


def _listener(accepted: list) -> int:
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            conn, _ = server.accept()
            accepted.append(conn.recv(100))
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    marker = "leakmarker" + secrets.token_hex(6)
    base = tmp_path_factory.mktemp("escape-world")
    build, lake, home = base / "build", base / "lake", base / "home" / ".config"
    for d in (build / "problems", lake / "data", home):
        d.mkdir(parents=True)
    pq.write_table(pa.table({"task_id": ["L1/relu"], "note": [marker]}), build / "manifest.parquet")
    (build / "problems" / "relu.py").write_text((FIXTURES / "tasks" / "relu.py").read_text())
    pq.write_table(pa.table({"item": ["x"] * 64}), lake / "data" / "items-0001.parquet")
    (lake / "catalog.json").write_text('{"snapshot": 7}')
    (lake / "secret.txt").write_text(marker)
    (home / "credentials").write_text(f"token = {marker}\n")
    cache = base / "cache"
    honest = verify(fixture_task("relu"), HONEST, "cpu", VerifySettings.for_tests(cache, seed=3))
    assert honest.passed, honest.feedback
    (cache / "secret.txt").write_text(marker)
    entry = next((cache / "entries").glob("*/*"))
    other = Workspace.create(base / "other-cache")  # a verification in flight next to ours
    (other.root / "child" / "candidate.py").write_text(f"# {marker}\n")
    torch.save({"expected": marker}, other.root / "child" / "outputs.pt")
    project_file = ROOT / "verifier" / f".escape-target-{os.getpid()}"
    project_file.write_bytes(os.urandom(64))
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", marker],
                              env={"EVOKERNEL_SECRET": marker})
    token = secrets.token_hex(6)
    accepted: list = []
    fill = {"BUILD_MANIFEST": str(build / "manifest.parquet"), "BUILD_PROBLEM": str(build / "problems" / "relu.py"),
            "LAKE_FILE": str(lake / "data" / "items-0001.parquet"), "LAKE_CATALOG": str(lake / "catalog.json"),
            "LAKE_DIR": str(lake), "LAKE_SECRET": str(lake / "secret.txt"), "CREDENTIALS": str(home / "credentials"),
            "OTHER_DIR": str(other.root / "child"), "OTHER_FILE": str(other.root / "child" / "candidate.py"),
            "OTHER_PICKLE": str(other.root / "child" / "outputs.pt"), "CACHE_ROOT": str(cache),
            "CACHE_SECRET": str(cache / "secret.txt"), "CACHE_MANIFEST": str(entry / "MANIFEST.json"),
            "CACHE_LIB": str(next(entry.rglob("kernel.so"))), "PROJECT_FILE": str(project_file),
            "PARENT_PID": str(parent.pid), "TMP_NEW": f"/tmp/evokernel-escape-{token}",
            "SHM_NAME": f"evokernel-escape-{token}", "PORT": str(_listener(accepted))}
    roots = [build, lake, home, other.root, project_file, *[p for p in cache.rglob("*") if p.is_file()]]
    absent = [Path(fill["TMP_NEW"]), Path("/dev/shm") / fill["SHM_NAME"]]
    yield World(fill, roots, absent, marker, accepted, cache)
    parent.kill()
    other.close()
    project_file.unlink(missing_ok=True)


def _verify(case: EscapeCase, world: World, disabled: tuple[str, ...]):
    settings = VerifySettings.for_tests(world.cache, seed=11, disabled_checks=disabled, timeout_s=60)
    return verify(fixture_task("relu"), case.source(world.fill), "cpu", settings)


def _assert_contained(case: EscapeCase, world: World, before: dict[str, str], verdict) -> None:
    assert not verdict.infrastructure_error, f"{case.name}: {verdict.infrastructure_error}"
    after = world.snapshot()
    changed = [p for p, digest in before.items() if after.get(p) != digest]
    assert not changed, f"{case.name} changed or removed {changed}\n{verdict.feedback}"
    assert not [p for p in world.absent if p.exists()], f"{case.name} created a file outside its directory"
    assert world.marker not in repr(verdict), f"{case.name} read a secret:\n{verdict.feedback}"
    assert not world.accepted, f"{case.name} reached the loopback server"


def test_the_corpus_is_large_and_covers_the_issue():
    names = {c.name for c in CASES}
    assert len(CASES) >= 25 and len(names) == len(CASES)
    for needle in ("fopen", "open_", "unlink", "rename", "syscall", "asm", "dlsym", "torch_save", "torch_load",
                   "from_file", "tofile", "memmap", "ctypes", "hardlink", "symlink", "cmdline", "other_verification"):
        assert any(needle in n for n in names), needle


@pytest.mark.slow
def test_every_escape_is_contained_at_run_time_with_every_static_check_off(world):
    """The run-time isolation alone: each case runs with the static policy disabled."""
    before = world.snapshot()
    with ThreadPoolExecutor(2) as pool:
        verdicts = list(pool.map(lambda case: (case, _verify(case, world, ALL_STATIC)), CASES))
    for case, verdict in verdicts:
        _assert_contained(case, world, before, verdict)
        assert verdict.warnings == () or all("isolation unavailable" not in w for w in verdict.warnings)


def _static_tier(case: EscapeCase, world: World, tmp_path: Path) -> str:
    """Which static tier refuses the case under the full policy ("" if none): the parent's checks,
    then the build checks on what the compile gate builds (the candidate itself never runs here)."""
    source = case.source(world.fill)
    native = [f for f in static_findings(source, "float32") if f.check.startswith("c_")]
    if native:
        return "tokens"
    outcome = CpuBackend().compile(source, tmp_path / case.name, 120)
    assert outcome.ok, f"{case.name}: {outcome.diagnostics}"
    roots = (*isolation.SYSTEM_READ_EXEC, *isolation.runtime_read_exec())
    return "build" if check_units(outcome.units, roots) else ""


@pytest.mark.parametrize("case", [c for c in CASES if c.c_code.strip()], ids=lambda c: c.name)
def test_native_escapes_are_refused_by_the_static_tier_they_target(case, world, tmp_path):
    assert _static_tier(case, world, tmp_path) == case.static


@pytest.mark.parametrize("name", ["c_paste_fopen_build_manifest", "c_libc_symbol_walk", "py_torch_from_file_shared"])
def test_full_policy_end_to_end(name, world):
    """Token pasting fails the hack gate after preprocessing; what no static check sees is contained."""
    case = next(c for c in CASES if c.name == name)
    before = world.snapshot()
    verdict = _verify(case, world, ())
    _assert_contained(case, world, before, verdict)
    if case.static == "build":
        assert verdict.failed_gate == "hack" and "after preprocessing" in verdict.feedback, verdict.feedback
        assert "fopen" in verdict.feedback


@pytest.mark.slow
def test_a_candidate_cannot_plant_a_library_for_another(tmp_path):
    """A candidate that rewrites its own build output (fresh, then a cached copy) after the compile
    report never reaches the cache: the next candidate with the same kernel gets a clean build."""
    tamper = HONEST + ('\nimport glob\nfor _p in glob.glob("build/cpu/*/kernel.so"):\n'
                       '    open(_p, "wb").write(b"planted")\n')
    settings = VerifySettings.for_tests(tmp_path / "cache", seed=5, disabled_checks=ALL_STATIC)
    first = verify(fixture_task("relu"), tamper, "cpu", settings)
    assert not first.infrastructure_error and not (tmp_path / "cache" / "entries").exists()  # refused on ingest
    honest = verify(fixture_task("relu"), HONEST, "cpu", settings)
    assert honest.passed and not honest.facts.compile_cached, honest.feedback
    library = next((tmp_path / "cache").rglob("kernel.so"))
    digest = hashlib.sha256(library.read_bytes()).hexdigest()
    verify(fixture_task("relu"), tamper, "cpu", settings)  # tampers with its seeded private copy
    again = verify(fixture_task("relu"), HONEST, "cpu", settings)
    assert again.passed and again.facts.compile_cached, again.feedback
    assert hashlib.sha256(library.read_bytes()).hexdigest() == digest
    assert b"planted" not in library.read_bytes()

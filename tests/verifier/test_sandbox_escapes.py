"""The escape corpus (escape_corpus.py) through the real verifier: no candidate changes a byte
outside its own directory, creates a file there, reaches a loopback server, or reads a secret
into its verdict.

Containment is shown with every static check switched off, so the run-time isolation alone must
hold (Landlock, seccomp, privileges); the full policy is then checked tier by tier in-process
(tokens before preprocessing, the build checks after it), and end to end for a few cases. The
targets: a benchmark build, a memory lake, the compile cache of an honest verification, another
verification's directory, the user's credentials, a file in this project's package, and a
process standing in for the campaign (its argv and environment hold a secret).

The issue-23 cases (``EscapeCase.z23``) get targets of their own (a manifest.parquet and a lake
file whose bytes, mode, mtime and extended attributes are watched, a UDP and a TCP listener on
loopback, a daemon name), so that whatever acted is attributed to its case; after them, no process
of any verification may survive (the test is a child subreaper, verifier tests' escape_world), and
an honest candidate whose library one of them tried to poison must still pass from the cache.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from escape_corpus import CASES, ESCAPED_TAG, POISON_TARGET, RELU, EscapeCase
from escape_world import DAEMON_PREFIX, Survivors, Targets, TcpListener, changed, tree_state, with_native_source
from verifier_taskutil import FIXTURES, fixture_task


from build_jobs import build_call

from verifier.api import verify
from verifier.backends.cpu import CpuBackend
from verifier.gates.hack_native import NATIVE_CHECKS, run_native_checks
from verifier.gates.hack_python import CHECKS
from verifier.gates.native_symbols import SYMBOL_CHECKS
from verifier.monitor.sites import Site
from verifier.sandbox import forked, landlock, seccomp
from verifier.settings import VerifySettings

pytestmark = pytest.mark.skipif(not (landlock.abi_version()[0] and seccomp.supported()),
                                reason="needs Landlock and the x86_64 seccomp filter")
ROOT = Path(__file__).resolve().parents[2]
ALL_STATIC = tuple(dict.fromkeys((*CHECKS, *NATIVE_CHECKS, *SYMBOL_CHECKS)))
HONEST = (FIXTURES / "honest_relu_omp.py").read_text()


POISON_CANDIDATE = with_native_source(HONEST, POISON_TARGET)  # honest, on the source the poisoning cases target


@dataclass
class World:
    fill: dict[str, str]
    roots: list[Path]  # every file below these must keep its bytes, mode, modification time and xattrs
    absent: list[Path]  # must not come into existence
    marker: str
    tcp: TcpListener  # the loopback server every case may name as {{PORT}}
    cache: Path
    base: Path
    survivors: Survivors
    cases: dict[str, "Targets"] = field(default_factory=dict)

    def fill_for(self, case: EscapeCase) -> dict[str, str]:
        """The placeholders of one case: the shared targets, plus targets of its own for an issue-23 case."""
        if not case.z23:
            return self.fill
        if case.name not in self.cases:
            self.cases[case.name] = Targets.create(self.base / "cases" / case.name, case.name, len(self.cases))
        return {**self.fill, **self.cases[case.name].fill}

    def snapshot(self) -> dict[str, str]:
        """{path: "sha256 mode mtime [xattrs]"} of every target file."""
        return tree_state(self.roots + [t.root for t in self.cases.values()])


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
    entry = next((cache / "builds").glob("*/*"))
    other = Site("runner")  # a verification in flight next to ours
    (other.work / "candidate.py").write_text(f"# {marker}\n")
    torch.save({"expected": marker}, other.work / "outputs.pt")
    project_file = ROOT / "verifier" / f".escape-target-{os.getpid()}"
    project_file.write_bytes(os.urandom(64))
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", marker],
                              env={"EVOKERNEL_SECRET": marker})
    token = secrets.token_hex(6)
    tcp = TcpListener()
    fill = {"BUILD_MANIFEST": str(build / "manifest.parquet"), "BUILD_PROBLEM": str(build / "problems" / "relu.py"),
            "LAKE_FILE": str(lake / "data" / "items-0001.parquet"), "LAKE_CATALOG": str(lake / "catalog.json"),
            "LAKE_DIR": str(lake), "LAKE_SECRET": str(lake / "secret.txt"), "CREDENTIALS": str(home / "credentials"),
            "OTHER_DIR": str(other.work), "OTHER_FILE": str(other.work / "candidate.py"),
            "OTHER_PICKLE": str(other.work / "outputs.pt"), "CACHE_ROOT": str(cache),
            "CACHE_SECRET": str(cache / "secret.txt"), "CACHE_MANIFEST": str(entry / "MANIFEST.json"),
            "CACHE_LIB": str(next(entry.rglob("kernel.so"))), "PROJECT_FILE": str(project_file),
            "PARENT_PID": str(parent.pid), "TMP_NEW": f"/tmp/evokernel-escape-{token}",
            "SHM_NAME": f"evokernel-escape-{token}", "PORT": str(tcp.port)}
    roots = [build, lake, home, other.root, project_file, *[p for p in cache.rglob("*") if p.is_file()]]
    absent = [Path(fill["TMP_NEW"]), Path("/dev/shm") / fill["SHM_NAME"]]
    with Survivors(DAEMON_PREFIX) as survivors:
        yield World(fill, roots, absent, marker, tcp, cache, base, survivors)
    parent.kill()
    other.close()
    project_file.unlink(missing_ok=True)


def _verify(case: EscapeCase, world: World, disabled: tuple[str, ...]):
    settings = VerifySettings.for_tests(world.cache, seed=11, disabled_checks=disabled, timeout_s=60)
    return verify(fixture_task("relu"), case.source(world.fill_for(case)), "cpu", settings)


def _assert_contained(case: EscapeCase, world: World, before: dict[str, str], verdict) -> None:
    assert not verdict.infrastructure_error, f"{case.name}: {verdict.infrastructure_error}"
    problems = contained_problems(case, world, before, verdict)
    assert not problems, f"{case.name}: " + "; ".join(problems) + f"\n{verdict.feedback}"


def contained_problems(case: EscapeCase, world: World, before: dict[str, str], verdict) -> list[str]:
    """What the case did outside its directory (empty when contained)."""
    problems = []
    own = world.cases.get(case.name)
    others = [str(t.root) + "/" for name, t in world.cases.items() if name != case.name]
    after = world.snapshot()  # another issue-23 case's own targets are that case's to answer for
    if moved := changed({p: s for p, s in before.items() if not p.startswith(tuple(others))}, after):
        problems.append(f"changed or removed {moved}")
    if created := [str(p) for p in world.absent if p.exists()]:
        problems.append(f"created {created} outside its directory")
    if world.marker in repr(verdict):
        problems.append("read a secret into its verdict")
    if ESCAPED_TAG in repr(verdict):  # an attack that saw itself succeed (the fork server's cases)
        problems.append("says it escaped: " + repr(verdict).split(ESCAPED_TAG, 1)[1][:600])
    if world.tcp.received:
        problems.append(f"reached the loopback TCP server: {world.tcp.received[:2]}")
    if own is not None:
        problems += own.problems({})  # its listeners (its files are in the snapshot above)
    return problems


def test_the_corpus_is_large_and_covers_the_issue():
    names = {c.name for c in CASES}
    assert len(CASES) >= 25 and len(names) == len(CASES)
    for needle in ("fopen", "open_", "unlink", "rename", "syscall", "asm", "dlsym", "torch_save", "torch_load",
                   "from_file", "tofile", "memmap", "ctypes", "hardlink", "symlink", "cmdline", "other_verification"):
        assert any(needle in n for n in names), needle


@pytest.mark.slow
def test_every_escape_is_contained_at_run_time_with_every_static_check_off(world):
    """The run-time isolation alone: each case runs with the static policy disabled; afterwards no process
    of any of them is alive and the honest candidate on the poisoning target still passes from the cache."""
    for case in CASES:
        world.fill_for(case)  # the issue-23 cases' own targets exist before the snapshot
    before = world.snapshot()
    servers = forked.server_pids()  # the fork servers of the verifications so far (a case may try to signal them)
    with ThreadPoolExecutor(2) as pool:
        verdicts = list(pool.map(lambda case: (case, _verify(case, world, ALL_STATIC)), CASES))
    survivors = world.survivors.check()
    servers_gone = servers - forked.server_pids()
    poisoned = verify(fixture_task("relu"), POISON_CANDIDATE, "cpu", VerifySettings.for_tests(world.cache, seed=13))
    failures = []
    for case, verdict in verdicts:
        problems = contained_problems(case, world, before, verdict)
        if verdict.infrastructure_error:
            problems.append(f"infrastructure error: {verdict.infrastructure_error}")
        if any("isolation unavailable" in w for w in verdict.warnings):
            problems.append(f"isolation unavailable: {verdict.warnings}")
        failures += [f"{case.name}: {p}" for p in problems]
    if survivors:
        failures.append(f"processes outlived their verification: {survivors}")
    if servers_gone:
        failures.append(f"fork servers died while the cases ran: {sorted(servers_gone)}")
    if not poisoned.passed:
        failures.append(f"the honest candidate on the poisoning target failed from the cache: {poisoned.feedback}")
    assert not failures, "\n".join(failures)


def _static_tier(case: EscapeCase, world: World, tmp_path: Path) -> str:
    """Which static tier refuses the case under the full policy ("" if none): the checks on the recorded
    source's text, then the build checks on what the monitor builds (the candidate never runs here)."""
    code = RELU + case.c_code
    for key, value in world.fill_for(case).items():
        code = code.replace("{{" + key + "}}", value)
    if run_native_checks(code, "float32"):
        return "tokens"
    outcome = build_call(CpuBackend(), "load_c", {"source": code, "functions": {"relu": "float*"}}, tmp_path / case.name)
    assert outcome.ok or outcome.gate == "hack", f"{case.name}: {outcome.detail}"
    return "build" if outcome.gate == "hack" else ""


@pytest.mark.parametrize("case", [c for c in CASES if c.c_code.strip()], ids=lambda c: c.name)
def test_native_escapes_are_refused_by_the_static_tier_they_target(case, world, tmp_path):
    assert _static_tier(case, world, tmp_path) == case.static


@pytest.mark.parametrize("name", ["c_paste_fopen_build_manifest", "c_libc_symbol_walk", "py_torch_from_file_shared"])
def test_full_policy_end_to_end(name, world):
    """Token pasting fails the hack gate on the built object's symbols; what no static check sees is contained."""
    case = next(c for c in CASES if c.name == name)
    before = world.snapshot()
    verdict = _verify(case, world, ())
    _assert_contained(case, world, before, verdict)
    if case.static == "build":
        assert verdict.failed_gate == "hack" and "the built code references fopen" in verdict.feedback, verdict.feedback


@pytest.mark.slow
def test_a_candidate_cannot_plant_a_library_for_another(tmp_path):
    """A candidate that rewrites the library it was given (in the runner's libs directory, which only the
    monitor writes) and the cache it cannot see: the next candidate with the same kernel gets the
    monitor's own build, byte for byte."""
    tamper = HONEST + ('\nimport glob\nfor _p in glob.glob("../libs/*/kernel.so") + glob.glob("/root/.cache/**/kernel.so"):\n'
                       '    open(_p, "wb").write(b"planted")\n')
    settings = VerifySettings.for_tests(tmp_path / "cache", seed=5, disabled_checks=ALL_STATIC)
    first = verify(fixture_task("relu"), tamper, "cpu", settings)
    assert not first.infrastructure_error and first.failed_gate == "compile", first.feedback  # the write was refused
    library = next((tmp_path / "cache").rglob("kernel.so"))
    digest = hashlib.sha256(library.read_bytes()).hexdigest()
    honest = verify(fixture_task("relu"), HONEST, "cpu", settings)
    assert honest.passed and honest.facts.compile_cached, honest.feedback
    assert hashlib.sha256(library.read_bytes()).hexdigest() == digest and b"planted" not in library.read_bytes()


UNCONFINED = """
import os, sys, types
from pathlib import Path

for source, work in zip(sys.argv[1::2], sys.argv[2::2]):  # one process: torch is imported once
    work = Path(work)
    (work / "build").mkdir(parents=True)
    os.environ["XDG_CACHE_HOME"] = str(work / "build")  # load_c's own cache, where the poisoner looks
    os.chdir(work)
    module = types.ModuleType("candidate")  # load_c builds and loads in this process: nothing confines it
    exec(compile(open(source).read(), "candidate.py", "exec"), module.__dict__)
"""


@pytest.mark.slow
def test_every_issue23_escape_acts_when_nothing_confines_it(tmp_path):
    """The positive control of the containment test: each issue-23 case imported with its library built
    and loaded in the same process, with no Landlock, seccomp, namespaces or privilege drop, acts on
    targets of its own (so a case contained above is the sandbox's doing, not a broken attack)."""
    cases = [c for c in CASES if c.z23]
    targets = {c.name: Targets.create(tmp_path / c.name / "targets", c.name, 90 + i) for i, c in enumerate(cases)}
    argv = []
    for case in cases:
        fill = {"TMP_NEW": str(tmp_path / case.name / "tmp-new"), "PORT": "9", **targets[case.name].fill}
        (tmp_path / case.name / "candidate.py").write_text(case.source(fill))
        argv += [str(tmp_path / case.name / "candidate.py"), str(tmp_path / case.name / "work")]
    before = {name: t.state() for name, t in targets.items()}
    log = tmp_path / "log"
    with Survivors(DAEMON_PREFIX + "9") as survivors, log.open("w") as out:  # a file: the daemon keeps it open
        run = subprocess.run([sys.executable, "-c", UNCONFINED, *argv], cwd=ROOT, stdout=out, stderr=out, timeout=600,
                             env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")})
        alive = survivors.check(grace_s=2.0)
    assert run.returncode == 0, log.read_text()[-2000:]
    idle = []
    for case in cases:
        work, fill = tmp_path / case.name / "work", targets[case.name].fill
        acted = targets[case.name].problems(before[case.name]) + [d for d in alive if fill["DAEMON_NAME"] in d]
        acted += [f"created {p}" for p in [tmp_path / case.name / "tmp-new"] if p.exists()]
        acted += [f"poisoned {p}" for p in (work / "build").rglob(f"cpu/{fill['POISON_KEY']}/kernel.so")
                  if b"z23-evil" in p.read_bytes()]
        if not acted:
            idle.append(case.name)
    assert not idle, f"these cases did nothing even without confinement: {idle}"


def test_the_corpus_covers_the_escape_classes_of_issue_23():
    """Class 1 (load-time code: UDP, TCP, daemon, metadata, cache poisoning) and class 3 (io_uring)."""
    names = {c.name for c in CASES if c.z23}
    assert {c.z23 for c in CASES if c.z23} == {"1", "3"}
    for needle in ("ctor_udp", "ctor_tcp", "daemon", "metadata", "cache_poison", "uring_socket_udp", "uring_setxattr",
                   "uring_openat", "uring_connect"):
        assert any(needle in n for n in names), needle

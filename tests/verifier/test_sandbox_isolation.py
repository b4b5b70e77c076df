"""The sandbox's isolation pieces with real kernel features and real processes: Landlock rules, the
policies of the three roles, namespaces (no network, loopback included; every descendant dies with
the process), the privilege drop as root (a dedicated uid where the runtime allows it, else uid 0
without capabilities), CPU pinning, the no-Landlock fallback (a seccomp filter makes the Landlock
calls fail, as a container profile would), and the seccomp filter reaching threads that existed
before it."""

from __future__ import annotations

import os
import socket
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from proc_scan import processes_naming

from verifier.sandbox import isolation, landlock, privileges, seccomp

ROOT = Path(__file__).resolve().parents[2]
needs_landlock = pytest.mark.skipif(not landlock.abi_version()[0], reason=landlock.abi_version()[1] or "Landlock")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="privilege drop needs root")
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin")


def _run(code: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, **kwargs)


@needs_landlock
def test_a_ruleset_grants_only_what_it_lists(tmp_path):
    allowed, hidden = tmp_path / "allowed", tmp_path / "hidden"
    allowed.mkdir()
    hidden.mkdir()
    (hidden / "secret").write_text("s")
    result = _run(f"""
        import os
        from verifier.sandbox import landlock
        os.system("true")
        import ctypes; ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)
        rules = landlock.Ruleset(landlock.abi_version()[0])
        for path in {isolation.runtime_read_exec()!r} + ("/usr", "/lib", "/lib64", "/etc/ld.so.cache"):
            rules.allow(path, landlock.READ_EXEC)
        rules.allow({str(allowed)!r}, landlock.WRITE)
        rules.restrict()
        open({str(allowed / "ok")!r}, "w").write("fine")
        for attempt in (lambda: open({str(hidden / "secret")!r}).read(), lambda: os.listdir({str(tmp_path)!r}),
                        lambda: os.symlink("x", {str(allowed / "link")!r}), lambda: open("/tmp/escape", "w")):
            try:
                attempt()
                print("ALLOWED")
            except PermissionError:
                print("denied")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["denied"] * 4 and (allowed / "ok").read_text() == "fine"


def test_the_runner_writes_only_its_directory_and_the_reference_nothing(tmp_path):
    child = isolation.build_policy("runner", tmp_path / "child", writable=True)
    reference = isolation.build_policy("reference", tmp_path / "reference", writable=False)
    assert str(tmp_path / "child") in child.write and str(tmp_path / "reference") in reference.read
    assert set(reference.write) == set(isolation.SYSTEM_WRITE)
    readable = set(child.read_exec) | set(child.read)
    assert str(ROOT) not in readable and str(ROOT / "verifier") in readable  # the packages, not the project
    # nothing from a home, a cache or a temp dir beyond the project's own packages and venv (a clone may live in /tmp)
    assert not any(p.startswith(("/home", "/root/.cache", "/tmp")) and "pytest" not in p and not p.startswith(str(ROOT))
                   for p in readable)
    assert isolation.Policy.from_env(child.to_env()) == child


def test_unreachable_paths_are_found_from_permission_bits(tmp_path):
    (tmp_path / "open" / "lib").mkdir(parents=True)
    (tmp_path / "closed" / "lib").mkdir(parents=True)
    for path in (tmp_path, tmp_path / "open", tmp_path / "open" / "lib", tmp_path / "closed" / "lib"):
        path.chmod(0o755)
    (tmp_path / "closed").chmod(0o700)
    parents_ok = not privileges.first_unreachable([str(tmp_path.parent)], read=False)
    if parents_ok:
        assert privileges.first_unreachable([str(tmp_path / "open" / "lib")]) == ""
    assert privileges.first_unreachable([str(tmp_path / "closed" / "lib")]) in (str(tmp_path / "closed"),
                                                                              privileges.first_unreachable([str(tmp_path)]))


@needs_root
def test_root_without_a_reachable_runtime_keeps_uid_0_but_no_capability(tmp_path):
    result = _run("""
        import os, subprocess
        from verifier.sandbox import privileges
        privileges.strip_capabilities()
        own = open("/proc/self/status").read()
        child = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True).stdout
        for text in (own, child):
            caps = dict(l.split(":\\t") for l in text.splitlines() if l.startswith("Cap"))
            print(os.getuid(), caps["CapEff"].strip(), caps["CapPrm"].strip(), caps["CapBnd"].strip())
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["0 0000000000000000 0000000000000000 0000000000000000"] * 2


PROBE = '''
import os, sys
print("uid", os.getuid(), os.getgid(), os.getgroups())
print("caps", [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0])
for label, path in (("own", "own_file"), ("root_file", os.environ["PROBE_TARGET"])):
    try:
        open(path, "a").write("x")
        print(label, "written")
    except PermissionError:
        print(label, "denied")
'''


def _sandboxed(tmp_path, code: str, role: str = "runner", threads: int = 0, **env) -> tuple[int, str]:
    """Run ``python -c code`` as a sandbox process of ``role`` (its own launcher, policy and log)."""
    from verifier.monitor.sites import Site
    from verifier.sandbox.spawn import Sandboxed, clean_env

    site = Site(role)
    try:
        policy, import_root = site.policy(threads=threads)
        process = Sandboxed([sys.executable, "-c", textwrap.dedent(code)], policy, site.work,
                            clean_env(2, site.work, import_root, extra=env), channel=False)
        code = process.wait(60)
        return code, process.log_text()
    finally:
        site.close()


def test_a_sandbox_process_reaches_no_address_and_takes_its_descendants_along(tmp_path):
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.settimeout(0.5)
    marker = tmp_path / "alive"
    code, log = _sandboxed(tmp_path, f"""
        import os, socket, time
        print("pid", os.getpid())
        for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
            s = socket.socket(socket.AF_INET, kind)
            try:
                s.sendto(b"x", ("127.0.0.1", {listener.getsockname()[1]})) if kind == socket.SOCK_DGRAM else \
                    s.connect(("127.0.0.1", {listener.getsockname()[1]}))
                print("reached")
            except OSError as exc:
                print("unreachable", exc.errno)
        if os.fork() == 0:  # a daemon that outlives its parent unless the namespace takes it along
            os.setsid()
            time.sleep(30)  # {marker}
            os._exit(0)
        """)
    assert code == 0, log
    assert "pid 1" in log and "reached" not in log and log.count("unreachable") == 2, log
    with pytest.raises(socket.timeout):
        listener.recvfrom(16)
    listener.close()
    assert processes_naming(str(marker)) == []


def test_runner_and_reference_share_the_same_pinned_cores(tmp_path):
    cpus = isolation.compute_cpus(1)
    code, log = _sandboxed(tmp_path, "import os\nprint('affinity', sorted(os.sched_getaffinity(0)))", threads=1)
    assert code == 0 and f"affinity {list(cpus)}" in log, log


def test_without_landlock_the_verdict_says_isolation_is_unavailable(tmp_path):
    """A seccomp filter makes the Landlock calls fail with ENOSYS (as a container profile might);
    the verification still runs and its verdict carries the warning."""
    result = _run(f"""
        import ctypes, struct, sys
        sys.path.insert(0, "tests/verifier")
        ld, jeq, ret = 0x20, 0x15, 0x06
        prog = [(ld, 0, 0, 0), (jeq, 3, 0, 444), (jeq, 2, 0, 445), (jeq, 1, 0, 446), (ret, 0, 0, 0x7FFF0000),
                (ret, 0, 0, 0x00050000 | 38)]
        raw = b"".join(struct.pack("<HBBI", *ins) for ins in prog)
        buf = ctypes.create_string_buffer(raw, len(raw))
        class Prog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.prctl(38, 1, 0, 0, 0) == 0
        assert libc.prctl(22, 2, ctypes.byref(Prog(len(prog), ctypes.cast(buf, ctypes.c_void_p))), 0, 0) == 0
        from pathlib import Path
        from verifier_taskutil import FIXTURES, fixture_task
        from verifier.api import verify
        from verifier.settings import VerifySettings
        v = verify(fixture_task("relu"), (FIXTURES / "honest_relu_omp.py").read_text(), "cpu",
                   VerifySettings.for_tests(Path({str(tmp_path)!r}), seed=1))
        print(v.passed, v.facts.isolation, v.warnings)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("True no filesystem isolation"), result.stdout
    assert "isolation unavailable: the kernel has no Landlock system calls" in result.stdout


@pytest.mark.skipif(not seccomp.supported(), reason="x86_64 Linux only")
def test_the_seccomp_filter_reaches_threads_started_before_it():
    result = _run("""
        import os, threading, time
        from verifier.sandbox import seccomp
        go = threading.Event()
        def early():
            go.wait()
            os.fork()  # process creation: the filter kills the whole process
            print("forked")
        threading.Thread(target=early).start()
        time.sleep(0.2)
        seccomp.install("runner")
        go.set()
        time.sleep(2)
        print("survived")
    """)
    assert result.returncode == -31 and "forked" not in result.stdout  # SIGSYS


MONITOR = '''
import os, signal, sys, time
from verifier.monitor.freeze import hold
from verifier.monitor.sites import Site
from verifier.sandbox.spawn import Sandboxed, clean_env

site = Site("runner")
policy, import_root = site.policy()
process = Sandboxed([sys.executable, "-c", "import time; time.sleep(120)  # MARKER"], policy, site.work,
                    clean_env(1, site.work, import_root), channel=False)
hold(process.pid())
print(process.pid(), flush=True)
time.sleep(120)
'''


def _with_marker(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_a_stopped_sandbox_process_dies_with_the_monitor_that_stopped_it(tmp_path):
    """A monitor killed outright (SIGKILL, the OOM killer) while a side is stopped between its windows, or
    a spare is held during a window: the stopped process cannot read the end of its channel, so its
    launcher, watching the monitor, kills it."""
    import signal
    import time

    marker = f"MARKER {tmp_path.name}"
    monitor = subprocess.Popen([sys.executable, "-c", MONITOR.replace("MARKER", marker)], stdout=subprocess.PIPE,
                               text=True, env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        pid = int(monitor.stdout.readline())
        assert pid in _with_marker(marker)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert state in ("T", "t"), state
        monitor.send_signal(signal.SIGKILL)
        monitor.wait(10)
        deadline = time.monotonic() + 15
        while _with_marker(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _with_marker(marker) == []
    finally:
        monitor.kill()
        for left in _with_marker(marker):
            os.kill(left, signal.SIGKILL)

"""The fork server (verifier.sandbox.zygote): a runner forked from it is confined exactly as an exec'd one.

A probe candidate reads, at import, what its process is and may do (uid, groups, capabilities,
no_new_privs, seccomp, limits, namespaces, descriptors, environment, import path, signal dispositions,
what it can read) and raises it as its import error, which the verdict carries. The same probe runs in
an exec'd runner (``EVOKERNEL_FORK_SERVER=0``) and a forked one; the two must agree, and the forked one
must hold no descriptor of the server and reach nothing of the server's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from verifier_taskutil import fixture_task

from verifier.api import verify
from verifier.gates.hack_native import NATIVE_CHECKS
from verifier.gates.hack_python import CHECKS
from verifier.monitor.pool import POOL
from verifier.sandbox import forked, isolation, landlock, seccomp
from verifier.settings import VerifySettings

pytestmark = pytest.mark.skipif(not (landlock.abi_version()[0] and seccomp.supported() and forked.enabled()),
                                reason="needs Landlock, the x86_64 seccomp filter and pidfds")
ROOT = Path(__file__).resolve().parents[2]
ALL_STATIC = tuple(dict.fromkeys((*CHECKS, *NATIVE_CHECKS)))

PROBE = '''
import json, os, resource, signal, socket, sys

def status(field):
    return [l.split(":", 1)[1].strip() for l in open("/proc/self/status") if l.startswith(field + ":")][0]

def readable(path):
    try:
        os.listdir(path) if os.path.isdir(path) else open(path, "rb").close()
        return True
    except OSError:
        return False

def fd_kind(fd):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return "?"
    return target.split(":")[0] if ":" in target and not target.startswith("/") else (
        "proc-self" if target.startswith("/proc/") else "file:" + target.rsplit("/", 1)[-1])

try:
    socket.create_connection(("127.0.0.1", 22), timeout=0.5).close()
    net = "reached"
except OSError as exc:
    net = type(exc).__name__
facts = {
    "uid": [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())],
    "caps": [status(f) for f in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")],
    "pid1": os.getpid() == 1, "dumpable": __import__("ctypes").CDLL(None).prctl(3, 0, 0, 0, 0),
    "limits": [resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_FSIZE, resource.RLIMIT_CORE,
                                               resource.RLIMIT_NPROC)],
    "affinity": sorted(os.sched_getaffinity(0)),
    "fds": sorted(fd_kind(int(fd)) for fd in os.listdir("/proc/self/fd")),
    "env": sorted(os.environ), "cwd_is_work": os.getcwd().endswith("/work"),
    "path0_is_cwd": sys.path[0] == os.getcwd(),
    "signals": [str(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD)],
    "net": net, "reads_tests": readable(ROOT_TESTS), "reads_root_home": readable("/root"),
    "reads_zygote": [readable(p) for p in ZYGOTES],
    "modules_torch": "torch" in sys.modules,
}
raise RuntimeError("PROBE" + json.dumps(facts) + "PROBE")

class ModelNew:
    pass
'''


def _facts(cache: Path, zygote_dirs: list[str]) -> dict:
    source = PROBE.replace("ROOT_TESTS", repr(str(ROOT / "tests"))).replace("ZYGOTES", repr(zygote_dirs))
    verdict = verify(fixture_task("relu"), "import torch\n" + source, "cpu",
                     VerifySettings.for_tests(cache, seed=7, disabled_checks=ALL_STATIC))
    texts = [t for g in verdict.gates for t in (g.detail, g.reason) if t.count("PROBE") >= 2]
    assert texts, verdict.to_json_dict()
    return json.loads(texts[0].split("PROBE")[1])


def test_a_forked_runner_is_confined_as_an_exec_d_one_and_reaches_nothing_of_the_server(tmp_path, monkeypatch):
    monkeypatch.setenv(forked.ENABLED_ENV, "0")
    POOL.close()  # no spare of the other kind is handed out
    execd = _facts(tmp_path / "cache", [])
    monkeypatch.setenv(forked.ENABLED_ENV, "1")
    POOL.close()
    first = _facts(tmp_path / "cache", [])
    roots = [str(s.root) for s in forked._SERVERS.values()]
    assert roots, "no fork server was started"
    forked_facts = _facts(tmp_path / "cache", [*roots, *(f"{r}/server.log" for r in roots)])
    assert first["uid"] == forked_facts["uid"]
    reached = forked_facts.pop("reads_zygote")
    assert reached == [False] * len(reached), "a forked runner reads the fork server's directory or log"
    execd.pop("reads_zygote")
    assert forked_facts["caps"][-2:] == ["1", "2"], forked_facts["caps"]  # no_new_privs, a seccomp filter
    if execd["uid"][0] != 0:  # a dedicated uid: the same one is not guaranteed, its being unprivileged is
        assert forked_facts["uid"][0] != 0 and forked_facts["uid"][0] != os.getuid()
        execd["uid"] = forked_facts["uid"] = "dropped"
    assert forked_facts == execd
    assert not forked_facts["reads_tests"] and not forked_facts["reads_root_home"] and forked_facts["net"] != "reached"


GC_PROBE = '''
import gc
raise RuntimeError("PROBE" + str(gc.get_freeze_count()) + "PROBE")

class ModelNew:
    pass
'''


def test_a_forked_runner_starts_with_the_server_s_objects_frozen(tmp_path, monkeypatch):
    """What the server imported is in the collector's permanent generation of a forked process: its collections
    do not walk torch's objects (nor copy the pages they lie on to write their counts)."""
    monkeypatch.setenv(forked.ENABLED_ENV, "1")
    POOL.close()
    verdict = verify(fixture_task("relu"), "import torch\n" + GC_PROBE, "cpu",
                     VerifySettings.for_tests(tmp_path / "cache", seed=7, disabled_checks=ALL_STATIC))
    texts = [t for g in verdict.gates for t in (g.detail, g.reason) if t.count("PROBE") >= 2]
    assert texts, verdict.to_json_dict()
    assert int(texts[0].split("PROBE")[1]) > 50_000  # torch's, numpy's and the roles' objects: 173,053 here


def test_a_fork_server_that_cannot_start_leaves_its_processes_to_the_launcher(tmp_path, monkeypatch):
    """A server whose interpreter fails at once: the verification still runs (exec'd), and that server is
    not tried again."""
    monkeypatch.setenv(forked.ENABLED_ENV, "1")
    POOL.close()
    forked.close_all()
    monkeypatch.setattr(forked, "BOOT_S", 5.0)
    real_init = forked.Server.__init__

    def broken_server(self, env):
        real_init(self, {**env, "PYTHONSAFEPATH": "1", "PYTHONHOME": "/nonexistent"})

    monkeypatch.setattr(forked.Server, "__init__", broken_server)
    verdict = verify(fixture_task("relu"), (ROOT / "tests/fixtures/kernels/honest_relu_omp.py").read_text(), "cpu",
                     VerifySettings.for_tests(tmp_path / "cache", seed=9))
    assert verdict.passed, verdict.to_json_dict()
    assert forked._BROKEN, "the failed server was not remembered"
    POOL.close()
    forked._BROKEN.clear()
    forked.close_all()


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


def test_killing_a_forked_runner_s_handle_ends_it_and_its_exit_status_is_read(tmp_path):
    """kill() on a forked launcher takes the process along; a process that exits says its status."""
    from verifier.monitor.sites import RunnerSite, RunnerSpec
    from verifier.sandbox import messages as msg

    if not forked.enabled():
        pytest.skip("no fork server here")
    site = RunnerSite(RunnerSpec("cpu", 1, 2048, 64))
    try:
        assert isinstance(site.process.proc, forked.ForkedProcess)
        ready = site.wait_ready(time.monotonic() + 60)
        assert isinstance(ready, msg.Ready) and ready.seccomp
        pid = site.process.pid()
        assert pid > 0 and Path(f"/proc/{pid}").exists()
        site.process.kill()
        assert site.process.wait(5.0) is not None
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), "the runner outlived its killed launcher"
    finally:
        site.close()
    site = RunnerSite(RunnerSpec("cpu", 1, 2048, 64))
    try:
        site.wait_ready(time.monotonic() + 60)
        site.process.channel.close()  # the runner reads the end of its channel and exits
        site.process.channel = None
        code = site.process.wait(20.0)
        assert code is not None and code != -9, code
    finally:
        site.close()


# The candidate's process group is its launcher's (the launcher made the session): with its own priority
# lowered, getpriority(PRIO_PGRP) is the launcher's. setpriority(PRIO_PGRP) is not filtered; the kernel lets
# it change another process's priority only when that process's capabilities are a subset of the caller's
# (commoncap's cap_safe_nice), which an unconfined launcher's never are for a process without capabilities.
NICE_PROBE = """
import os
os.setpriority(os.PRIO_PROCESS, 0, 19)
before = os.getpriority(os.PRIO_PGRP, 0)
try:
    os.setpriority(os.PRIO_PGRP, 0, 19)
except OSError:
    pass
raise RuntimeError(f"NICE[{before}, {os.getpriority(os.PRIO_PGRP, 0)}]NICE")

class ModelNew:
    pass
"""


def _launcher_nice(cache: Path) -> list[int]:
    """[the launcher's nice value, the same after its runner tried to set it to 19]."""
    verdict = verify(fixture_task("relu"), NICE_PROBE, "cpu", VerifySettings.for_tests(cache, seed=7,
                                                                                     disabled_checks=ALL_STATIC))
    texts = [t for g in verdict.gates for t in (g.detail, g.reason) if "NICE[" in t]
    assert texts, verdict.to_json_dict()
    return json.loads(texts[0].split("NICE")[1])


NOT_ROOT = """
import json, os, sys
from pathlib import Path
sys.path[:0] = [sys.argv[2], sys.argv[3]]
from test_sandbox_fork_server import _facts, _launcher_nice
from verifier.monitor.pool import POOL
from verifier.sandbox import forked

facts = {}
for mode in ("0", "1"):
    os.environ[forked.ENABLED_ENV] = mode
    POOL.close()
    facts[mode] = {**_facts(Path(sys.argv[1]), []), "launcher_nice": _launcher_nice(Path(sys.argv[1]))}
POOL.close()
print("FACTS" + json.dumps(facts))
"""
CAPS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


def test_a_forked_runner_of_a_monitor_that_is_not_root_holds_no_capability(tmp_path):
    """A monitor that is not root: the launcher makes the PID and network namespaces inside a new user
    namespace (isolation.enter_namespaces), where it holds every capability. An exec'd runner loses them at
    its exec (its uid is not 0 there); a forked one runs the role's main without an exec, and the policy of a
    monitor that is not root drops nothing (no uid switch, no strip_caps), so the candidate would run with
    every capability of that namespace (CapPrm = CapEff = all): the kernel's own ptrace and signal checks
    against its launcher (an unconfined process of the monitor's uid in the same namespace) would no longer
    hold, only seccomp and Landlock. One does not already: through its process group (setpriority(PRIO_PGRP),
    which no filter refuses) a forked runner sets its launcher's nice value, where an exec'd one gets EPERM.
    Here (root) the monitor plays one that is not: ``unshare --user`` maps uid 1000 onto ours."""
    if os.geteuid() != 0:  # a monitor that is not root already: compare here
        facts = {}
        for mode in ("0", "1"):
            os.environ[forked.ENABLED_ENV] = mode
            POOL.close()
            facts[mode] = {**_facts(tmp_path / "cache", []), "launcher_nice": _launcher_nice(tmp_path / "cache")}
        os.environ.pop(forked.ENABLED_ENV)
        POOL.close()
    else:
        unshare = shutil.which("unshare")
        as_user = [unshare or "unshare", "--user", "--map-user=1000", "--map-group=1000"]
        if not unshare or subprocess.run([*as_user, "true"], capture_output=True).returncode != 0:
            pytest.skip("no unshare(1) that makes a user namespace here")
        run = subprocess.run([*as_user, sys.executable, "-c", NOT_ROOT, str(tmp_path / "cache"),
                              str(ROOT / "tests" / "verifier"), str(ROOT / "tests")], cwd=ROOT, capture_output=True,
                             text=True, timeout=600, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")})
        assert "FACTS" in run.stdout, run.stdout[-2000:] + run.stderr[-3000:]
        facts = json.loads(run.stdout.split("FACTS", 1)[1])
    execd, forked_facts = facts["0"], facts["1"]
    assert execd["uid"] == forked_facts["uid"] and execd["uid"][0] != 0, (execd["uid"], forked_facts["uid"])
    assert forked_facts["caps"][-2:] == ["1", "2"], forked_facts["caps"]  # no_new_privs, a seccomp filter
    nice = {"exec'd": execd["launcher_nice"], "forked": forked_facts["launcher_nice"]}
    assert execd["launcher_nice"][0] == execd["launcher_nice"][1], nice  # EPERM: the launcher is out of reach
    assert (dict(zip(CAPS, forked_facts["caps"])), forked_facts["launcher_nice"]) == \
        (dict(zip(CAPS, execd["caps"])), execd["launcher_nice"]), (
        "a forked runner keeps the capabilities of its launcher's user namespace and uses them on its launcher: "
        f"forked {dict(zip(CAPS, forked_facts['caps']))}, exec'd {dict(zip(CAPS, execd['caps']))}; "
        f"the launcher's nice value before and after its runner set it to 19: {nice}")


def test_a_spare_forked_from_a_server_closed_since_still_verifies(tmp_path, monkeypatch):
    """A fork server closed while processes it forked live on (forked.KEPT_MOST: a third environment closes the
    oldest server, and the pool's spares forked from it stay in the pool; they "live on: each watches the
    monitor itself"). Closing it removes its directory, and with it the import links through which its
    processes' ``verifier`` package was imported (``verifier.__path__`` is the server's ``.imports-work``): a
    spare imports what the server did not preload (the runner's loaders, serve, the backend's module) only at
    its candidate's Start, so an honest candidate given such a spare must still pass (today it fails at the
    compile gate: "the sandbox process exited with code 1 during the import of the candidate", a
    ModuleNotFoundError under the removed directory)."""
    monkeypatch.setenv(forked.ENABLED_ENV, "1")
    POOL.close()
    forked.close_all()
    honest = (ROOT / "tests/fixtures/kernels/honest_relu_omp.py").read_text()
    try:
        first = verify(fixture_task("relu"), honest, "cpu", VerifySettings.for_tests(tmp_path / "cache", seed=3))
        assert first.passed, first.feedback
        spares = POOL.spare_launcher_pids()
        assert spares, "no spare was booted for the next verification"
        forked.close_all()  # what a third environment does to the oldest server
        second = verify(fixture_task("relu"), honest, "cpu", VerifySettings.for_tests(tmp_path / "cache", seed=4))
    finally:
        POOL.close()
        forked.close_all()
    assert second.passed, second.feedback


def test_the_fork_server_escape_cases_act_where_landlock_is_off(tmp_path, monkeypatch):
    """The positive control of the escape corpus's fork-server cases (escape_corpus.FORK_CASES, contained in
    test_sandbox_escapes): with the processes' Landlock domain switched off, what a forked runner finds in the
    memory it inherits from the server (another process's directory, the server's) and the server's directory
    it finds through its import links and environ are its to read and write, so that their containment there
    is the sandbox's doing, not a broken attack. The servers they wrote into are closed afterwards."""
    from escape_corpus import ESCAPED_TAG, FORK_CASES

    monkeypatch.setenv(forked.ENABLED_ENV, "1")
    POOL.close()
    forked.close_all()
    real, policies = isolation.build_policy, []

    def without_landlock(*args, **kwargs):
        policies.append(dataclasses.replace(real(*args, **kwargs), landlock_abi=0))
        return policies[-1]

    monkeypatch.setattr(isolation, "build_policy", without_landlock)
    cases = {c.name: c for c in FORK_CASES}
    try:
        acted = {}
        for name in ("fork_heap_remnants_reuse", "fork_server_directory_and_log"):
            verdict = verify(fixture_task("relu"), cases[name].source({"CASE": name}), "cpu",
                             VerifySettings.for_tests(tmp_path / "cache", seed=7, disabled_checks=ALL_STATIC))
            acted[name] = ESCAPED_TAG in repr(verdict)
            assert not verdict.infrastructure_error, verdict.infrastructure_error
        assert forked._SERVERS, "no fork server was started"
    finally:
        POOL.close()
        forked.close_all()
    assert acted["fork_heap_remnants_reuse"], "the memory scan found nothing of the server's to use"
    if all(p.uid is None for p in policies):  # uid 0 without capabilities: the server's files are its owner's
        assert acted["fork_server_directory_and_log"], "the server's directory was out of reach even without Landlock"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_the_server_preloads_what_its_processes_import_later_and_leaves_triton_s_mode_open():
    """The runner's loaders and call server and the reference worker's workload count (torch's flop formulas)
    come imported from the server (0.45 s of CPU a verification when each process imported them itself), and
    triton, which the flop formulas' module imports, is not: a forked triton runner still chooses its mode."""
    code = ("import sys; from verifier.sandbox import zygote; zygote.preload()\n"
            "later = [m for m in (*zygote.LATER_IMPORTS, 'verifier.sandbox.workload', 'torch.utils.flop_counter') "
            "if m not in sys.modules]\n"
            "assert not later and 'triton' not in sys.modules, (later, 'triton' in sys.modules)\n"
            "import importlib.util\n"
            "if importlib.util.find_spec('triton'):\n"
            "    from verifier.backends.triton_modes import interpreted_now, use_mode\n"
            "    use_mode(True); import triton.language\n"
            "    assert interpreted_now() is True\n"
            "print('ok')\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]

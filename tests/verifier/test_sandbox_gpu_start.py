"""What a sandbox process needs to start a GPU, checked without one (the H200 run of 2026-11-30 found each):

- the CUDA driver names its threads at start-up (writes /proc/<pid>/task/<tid>/comm): a process that opens a
  device may write its own task entries, and nothing else in /proc; it gets no PID namespace of its own
  (the driver's ids would name another process under the machine's /proc);
- the driver reserves address space far beyond the sandbox's memory limit: a device side's limit is on data;
- torch's extension build in the builder (no device) is told the target architecture instead of asking the
  driver;
- the runner starts the device the monitor found, or fails with the driver's error, never falls back to
  the CPU.
"""

from __future__ import annotations

import dataclasses
import json
import resource
import subprocess
import sys
import textwrap

import pytest
from proc_scan import processes_naming

from verifier.sandbox import isolation, landlock

ROOT = isolation.package_root()


def _confined(policy: isolation.Policy, body: str) -> subprocess.CompletedProcess:
    code = textwrap.dedent(f"""
        import json, os, resource, sys
        sys.path.insert(0, {str(ROOT)!r})
        from verifier.sandbox import isolation
        isolation.apply(isolation.Policy.from_env({policy.to_env()!r}))
    """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def _policy(tmp_path, devices: tuple[str, ...]) -> isolation.Policy:
    policy = isolation.build_policy("runner", tmp_path, writable=True)
    return dataclasses.replace(policy, devices=devices, memory_mb=2048)


def test_a_device_side_gets_no_pid_namespace_and_every_other_side_does(tmp_path):
    assert isolation.own_pid_namespace(_policy(tmp_path, ()))
    assert not isolation.own_pid_namespace(_policy(tmp_path, ("/dev/null",)))


@pytest.mark.parametrize("devices", [(), ("/dev/null",)])
def test_a_device_sides_memory_limit_is_on_data_not_address_space(tmp_path, devices):
    done = _confined(_policy(tmp_path, devices), """
        print(json.dumps([resource.getrlimit(resource.RLIMIT_AS)[0], resource.getrlimit(resource.RLIMIT_DATA)[0]]))
    """)
    assert done.returncode == 0, done.stderr
    address_space, data = json.loads(done.stdout)
    limit = 2048 << 20
    unlimited = resource.RLIM_INFINITY
    assert (address_space, data) == ((unlimited, limit) if devices else (limit, unlimited))


@pytest.mark.skipif(not landlock.abi_version()[0], reason="no Landlock on this kernel")
@pytest.mark.parametrize("devices", [(), ("/dev/null",)])
def test_a_device_side_may_name_its_threads_and_write_nothing_else_in_proc(tmp_path, devices):
    """What cuInit does (a thread's comm under /proc/<pid>/task), allowed only where the process opens a device;
    another process's entries and the rest of its own stay closed."""
    done = _confined(_policy(tmp_path, devices), """
        import threading
        results = {}
        def attempt(name, path, text):
            try:
                with open(path, "w") as f:
                    f.write(text)
                results[name] = "ok"
            except OSError as exc:
                results[name] = exc.errno
        tid = threading.get_native_id()
        attempt("comm", f"/proc/{os.getpid()}/task/{tid}/comm", "cuda-EvtHandlr")
        attempt("own_oom", f"/proc/{os.getpid()}/oom_score_adj", "500")
        attempt("parent_comm", f"/proc/{os.getppid()}/comm", "x")
        print(json.dumps(results))
    """)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert results["comm"] == ("ok" if devices else 13)  # EACCES
    assert results["own_oom"] == 13 and results["parent_comm"] == 13


def test_the_cuda_build_is_told_its_target_and_never_asks_the_driver(tmp_path, monkeypatch):
    from torch.utils import cpp_extension

    from verifier.sandbox import inline_builder

    seen = {}
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)
    def build(*args, **kwargs):
        seen["arch"] = inline_builder.os.environ.get("TORCH_CUDA_ARCH_LIST")

    monkeypatch.setattr(cpp_extension, "_write_ninja_file_and_build_library", build)
    job = {"name": "ext", "cpp_sources": "", "cuda_sources": "__global__ void k() {}", "functions": None,
           "arch": "sm_90a"}
    (tmp_path / "job.json").write_text(json.dumps(job))
    monkeypatch.chdir(tmp_path)
    assert inline_builder.main(["inline_builder", "job.json"]) == 0
    assert seen["arch"] == "9.0a"


def test_starting_a_device_this_torch_cannot_reach_raises_the_drivers_error():
    """The runner's boot calls this for the device the monitor found: no silent CPU fallback."""
    import torch

    from verifier.backends.device_sync import start_device

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: starting it succeeds")
    with pytest.raises((AssertionError, RuntimeError)):
        start_device("cuda")


def test_without_a_pid_namespace_the_launcher_still_takes_every_descendant_along(tmp_path):
    """A device side is not pid 1 of a namespace of its own; a daemon it leaves behind (double fork, own
    session) is killed by its launcher, the subreaper of everything it starts, once the process has ended."""
    from verifier.monitor.sites import Site
    from verifier.sandbox.spawn import Sandboxed, clean_env

    marker = tmp_path / "alive"
    site = Site("runner")
    try:
        policy, import_root = site.policy()
        policy = dataclasses.replace(policy, devices=("/dev/null",))
        code = textwrap.dedent(f"""
            import os, time
            print("pid", os.getpid())
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    time.sleep(30)  # {marker}
                os._exit(0)
            time.sleep(0.3)
            """)
        process = Sandboxed([sys.executable, "-c", code], policy, site.work, clean_env(2, site.work, import_root),
                            channel=False)
        assert process.wait(60) == 0, process.log_text()
        log = process.log_text()
        assert "own network namespace" in process.isolation().mechanism
    finally:
        site.close()
    assert "pid 1\n" not in log, log
    assert processes_naming(str(marker)) == []


def test_whether_a_device_starts_confined_is_asked_in_a_real_sandbox_process():
    """``evokernel backends`` asks this per device backend; here (a CPU torch) the confined process runs and
    its own error comes back in one line."""
    import torch

    from verifier.monitor.device_start import starts_confined

    why = starts_confined("cuda", memory_mb=6144)
    if torch.cuda.is_available():
        assert why == ""
    else:
        assert why and "CUDA" in why and "\n" not in why, why


@pytest.mark.skipif(not hasattr(__import__("os"), "getuid") or __import__("os").getuid() != 0,
                    reason="switching to a sandbox uid needs root")
def test_a_chain_of_processes_of_a_sandbox_uid_is_killed_at_once(tmp_path):
    """Each process starts the next and exits at once (an outside case of this stop): the launcher's scan of
    its orphans does not catch it (a member lives a few ms); a kill(-1) as the dedicated uid takes every one at once."""
    marker = f"CHAIN{tmp_path.name}"
    code = textwrap.dedent(f"""
        import subprocess, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from verifier.sandbox.launcher import kill_descendants
        chain = 'sh -c "$0" "$0" {marker} & exit'
        subprocess.Popen(["/bin/sh", "-c", chain, chain], user=1999054321, group=1999054321, start_new_session=True)
        time.sleep(0.5)
        started = time.monotonic()
        kill_descendants(1999054321)
        print(round(time.monotonic() - started, 2))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    import time

    time.sleep(0.3)
    seen = [pid for _ in range(50) for pid in processes_naming(marker)]  # a chain's member lives a few ms: look often
    assert seen == [], done.stdout
    assert float(done.stdout.strip()) < 5.0, done.stdout

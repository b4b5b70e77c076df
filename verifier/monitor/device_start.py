"""Whether a GPU (or NPU) starts inside the sandbox, asked before any verification needs it.

A process confined as a device runner is (the runner's policy with the device nodes, its environment, its
launcher: no PID namespace, a data limit, its own /proc task entries writable) starts the device and ends.
``evokernel backends`` says what it found for each device backend, so that a machine whose driver needs
something the sandbox denies is named up front, in one line with the driver's own error, rather than by
every verification ending as the machine's outcome ("reference worker failed ... CUDA error 304"). On an
H200 the driver first needed four things the sandbox denied (docs/verifier.md, "On a GPU")."""

from __future__ import annotations

import subprocess
import sys

from verifier.monitor.sites import Site
from verifier.sandbox.spawn import Sandboxed, clean_env

STARTED = "device started"


def starts_confined(device: str, memory_mb: int, threads: int = 1, timeout_s: float = 120.0) -> str:
    """"" where ``device`` starts in a process confined as a runner on it, else why not (the last line the
    process wrote: the driver's error)."""
    site = Site("runner")
    try:
        policy, import_root = site.policy(devices=True, memory_mb=memory_mb, threads=threads)
        code = (f"from verifier.backends.device_sync import start_device\n"
                f"start_device({device!r})\nprint({STARTED!r})\n")
        process = Sandboxed([sys.executable, "-c", code], policy, site.work,
                            clean_env(threads, site.work, import_root, devices=True), channel=False)
        try:
            returncode = process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return f"the device did not start within {timeout_s:.0f} s in a confined process"
        finally:
            log = process.log_text()
            process.close()
    finally:
        site.close()
    if returncode == 0 and STARTED in log:
        return ""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return lines[-1][:400] if lines else f"the confined process ended with exit code {returncode} and no output"

"""Which step of the sandbox stops a GPU's driver from starting: each step on its own (and some together), in
a fresh child that applies it and then starts CUDA, allocates, launches and synchronises. Where
``evokernel backends`` says the device cannot start in the sandbox, this says which step is the cause.

On an H200 (driver 580, 2026-11-30), before the sandbox's GPU changes (docs/verifier.md, "On a GPU"): a 6 GiB
address-space limit gave error 2, the seccomp filter and the Landlock policy error 304; a data limit, a
network namespace and a plain uid change did not matter; the device started before the policy and the filter
worked. Variants: none, as (RLIMIT_AS), data (RLIMIT_DATA), seccomp, early+seccomp (started first), ns (a
network namespace), nolandlockuid (a uid change alone), policy (the runner's policy as built today: uid,
Landlock, limits), policyas (and an address-space limit after it), and early+ combinations.

Run (root, on the GPU machine): python3 -m benchmarks.gpu_sandbox_steps
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r'''
import ctypes, os, sys, resource, json
sys.path.insert(0, os.getcwd())
variant = sys.argv[1]
parts = set(variant.split("+"))
import torch
from verifier.sandbox import isolation, seccomp, landlock
def cuda_work():
    torch.cuda.init()
    x = torch.ones(1 << 20, device="cuda")
    y = (x * 2).sum().item()
    torch.cuda.synchronize()
    return y
if "early" in parts:
    cuda_work()
if "as" in parts:
    resource.setrlimit(resource.RLIMIT_AS, (6144 << 20,) * 2)
if "data" in parts:
    resource.setrlimit(resource.RLIMIT_DATA, (6144 << 20,) * 2)
if "ns" in parts:
    libc = ctypes.CDLL(None, use_errno=True)
    print("unshare", libc.unshare(0x40000000), file=sys.stderr)  # network only (pid ns needs a fork)
if "policy" in parts or "policyas" in parts:
    from pathlib import Path
    pol = isolation.build_policy("runner", Path(sys.argv[2]), writable=True, devices=True, memory_mb=6144)
    print("policy", pol.uid, pol.strip_caps, pol.landlock_abi, pol.devices, file=sys.stderr)
    if pol.uid is not None:
        os.setgroups(list(pol.groups)); os.setgid(pol.gid); os.setuid(pol.uid)
    isolation.apply(pol)
    if "policyas" in parts:  # and the address-space limit every sandbox process had before the GPU changes
        resource.setrlimit(resource.RLIMIT_AS, (6144 << 20,) * 2)
if "nolandlockuid" in parts:
    os.setgid(61000); os.setuid(61000)
if "seccomp" in parts:
    print("seccomp", seccomp.install(seccomp.RUNNER), file=sys.stderr)
try:
    print("OK", cuda_work())
except BaseException as exc:
    print("FAIL", type(exc).__name__, str(exc)[:300])
'''

VARIANTS = ["none", "as", "data", "seccomp", "early+seccomp", "ns", "nolandlockuid", "policy", "policyas",
            "early+policyas", "policy+seccomp", "early+policy+seccomp"]


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        print("gpu_sandbox_steps: needs an NVIDIA GPU and a CUDA build of torch (none here)")
        return 2
    root = Path(tempfile.mkdtemp(prefix="probe-"))
    os.chmod(root, 0o755)
    procs = {}
    for v in VARIANTS:
        work = root / v.replace("+", "_")
        work.mkdir()
        os.chmod(work, 0o777)
        procs[v] = subprocess.Popen([sys.executable, "-c", CHILD, v, str(work)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, cwd=os.getcwd())
    for v, p in procs.items():
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill(); out, err = "TIMEOUT", ""
        print(f"{v:24s} rc={p.returncode} {out.strip()[:300]} | {err.strip()[-400:]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

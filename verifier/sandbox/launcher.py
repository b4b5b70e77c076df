"""A disposable intermediate process between the trusted caller and a sandbox child.

``python -m verifier.sandbox.launcher MODULE IN_FD OUT_FD`` runs ``python -m MODULE IN_FD OUT_FD``
in its own (already new) session and mirrors its exit: a signal death is re-raised on itself so
the caller still sees "killed by SIGSEGV". The child's parent and process group are the
launcher's, so ``os.kill(os.getppid())`` or ``os.killpg(os.getpgid(os.getppid()))`` from a
candidate (should seccomp be unavailable) hits only this disposable pair, never the caller.

The isolation policy arrives in ``EVOKERNEL_SANDBOX_POLICY`` (removed from the child's
environment) and is applied in the forked child just before it executes the module: the uid
switch by ``Popen(user=..., group=..., extra_groups=...)`` (only the groups of GPU/NPU nodes), then capabilities, no_new_privs and
Landlock (:func:`verifier.sandbox.isolation.apply`). This process has a single thread, so the
fork is safe. A policy that cannot be applied stops the verification (exit code 70, reason in
the log) rather than running the candidate unconfined.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from verifier.sandbox import isolation

ISOLATION_FAILED = 70


def _confine(policy: isolation.Policy) -> None:
    try:
        isolation.apply(policy)
    except BaseException as exc:
        os.write(2, f"sandbox isolation failed: {exc!r}\n".encode())
        raise


def main(argv: list[str]) -> int:
    module, in_fd, out_fd = argv[1], int(argv[2]), int(argv[3])
    policy = isolation.Policy.from_env(os.environ.pop(isolation.POLICY_ENV, "{}"))
    switch = {} if policy.uid is None else {"user": policy.uid, "group": policy.gid, "extra_groups": list(policy.groups)}
    try:  # in_fd/out_fd are inheritable; close_fds=False keeps the /proc/self pin apply() opens
        child = subprocess.Popen([sys.executable, "-m", module, str(in_fd), str(out_fd)], close_fds=False,
                                 env=dict(os.environ), preexec_fn=lambda: _confine(policy), **switch)
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"sandbox launcher: cannot start {module}: {exc}", file=sys.stderr)
        return ISOLATION_FAILED
    os.close(in_fd)
    os.close(out_fd)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    code = child.wait()
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))

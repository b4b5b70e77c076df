"""A disposable intermediate process between the trusted caller and a sandbox child.

``python -m verifier.sandbox.launcher MODULE IN_FD OUT_FD`` runs ``python -m MODULE IN_FD OUT_FD``
in its own (already new) session and mirrors its exit: a signal death is re-raised on itself so
the caller still sees "killed by SIGSEGV". The child's parent and process group are the
launcher's, so ``os.kill(os.getppid())`` or ``os.killpg(os.getpgid(os.getppid()))`` from a
candidate (should seccomp be unavailable) hits only this disposable pair, never the caller.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys


def main(argv: list[str]) -> int:
    module, in_fd, out_fd = argv[1], int(argv[2]), int(argv[3])
    child = subprocess.Popen([sys.executable, "-m", module, str(in_fd), str(out_fd)], pass_fds=(in_fd, out_fd))
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

"""Privileges of a sandbox process when the verifier runs as root.

Parent side, :func:`plan`: root hands each sandbox process an unprivileged uid/gid of its own
(from a window no real account uses, inside this user namespace's mapping), so that plain file
permissions already keep it out of root's files and away from other sandboxes. That needs the
Python runtime, the packages and the toolchains to be readable by "other" users; where they are
not (e.g. a pyenv under /root, mode 0700), the process keeps uid 0 but loses every capability
and the verdict says so. Not root: nothing to drop.

Child side (the launcher's fork, before exec), :func:`strip_capabilities`: empty the bounding,
ambient, effective and permitted sets and lock the securebits, so that neither this process nor
anything it executes regains a capability as uid 0.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

UID_BASE = 2_000_000_000  # far above any account; used when the namespace maps it
UID_WINDOW = 1 << 16
NPROC_LIMIT = 4096  # threads of one sandbox uid (a fork bomb stops here even without seccomp)
_COUNTER = itertools.count((os.getpid() * 7919) % UID_WINDOW)

PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 28, 47, 4
SECBITS_LOCKED_NOROOT = 0b11101111  # NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE, their locks, KEEP_CAPS_LOCKED
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


@dataclass(frozen=True)
class PrivilegePlan:
    uid: int | None = None  # run the sandbox process as this uid/gid (None: keep ours)
    gid: int | None = None
    strip_caps: bool = False  # root keeps uid 0 but loses every capability
    note: str = ""  # what the verdict reports
    warning: str = ""  # non-empty when root could not drop to an unprivileged uid


def plan(needed: Iterable[str], workdir: Path) -> PrivilegePlan:
    """The privileges of one sandbox process whose runtime reads ``needed`` and works in ``workdir``."""
    if os.geteuid() != 0:
        return PrivilegePlan(note=f"uid {os.geteuid()} (not root)")
    blocked = first_unreachable(needed) or first_unreachable([str(workdir.parent)], read=False)
    if blocked:
        return PrivilegePlan(strip_caps=True, note="uid 0 without capabilities",
                             warning=f"privilege drop unavailable: {blocked} is not readable by other users, so "
                                     "the sandbox runs as uid 0 with every capability removed")
    offset = next(_COUNTER) % UID_WINDOW
    uid, gid = _sandbox_id("uid_map", offset), _sandbox_id("gid_map", offset)
    if uid is None or gid is None:
        return PrivilegePlan(strip_caps=True, note="uid 0 without capabilities",
                             warning="privilege drop unavailable: no free uid in this user namespace, so the "
                                     "sandbox runs as uid 0 with every capability removed")
    return PrivilegePlan(uid, gid, note="a dedicated unprivileged uid")


def first_unreachable(paths: Iterable[str], read: bool = True) -> str:
    """The first path an unrelated user cannot reach (search every parent, read the path unless
    ``read`` is False), or ""."""
    checked: set[str] = set()
    for raw in paths:
        path = Path(os.path.realpath(raw))
        if not path.exists():
            continue
        for node in [*reversed(path.parents), path]:
            key = str(node)
            if key in checked:
                continue
            mode = node.stat().st_mode
            need = stat.S_IXOTH if node != path or stat.S_ISDIR(mode) else 0
            need |= stat.S_IROTH if node == path and read else 0
            if mode & need != need:
                return key
            checked.add(key)
    return ""


def _sandbox_id(map_name: str, offset: int) -> int | None:
    """A uid (gid) from the sandbox window, inside this namespace's mapping."""
    try:
        extents = [tuple(int(v) for v in line.split()) for line in Path(f"/proc/self/{map_name}").read_text().splitlines()]
    except (OSError, ValueError):
        extents = [(0, 0, 1 << 32)]
    for inside, _outside, count in extents:
        if inside <= UID_BASE and UID_BASE + UID_WINDOW <= inside + count:
            return UID_BASE + offset
    inside, _outside, count = max(extents, key=lambda e: e[0] + e[2])
    if count > 2 * UID_WINDOW:
        return inside + count - 1 - UID_WINDOW + offset
    return None


def strip_capabilities() -> None:
    """Leave uid 0 without any capability, for this process and everything it executes."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECUREBITS, SECBITS_LOCKED_NOROOT, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECUREBITS) failed")
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and cap < 41:  # 0..40 exist on every 6.x kernel
            raise OSError(ctypes.get_errno(), f"prctl(PR_CAPBSET_DROP, {cap}) failed")
    clear_capabilities()


def clear_capabilities() -> None:
    """Hold no capability (permitted, effective, inheritable, ambient): what an exec by a uid other than 0
    leaves, for a process that runs on without one (verifier.sandbox.zygote)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # two __user_cap_data_struct, all zero
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def limit_processes() -> None:
    """Bound the threads of a dedicated sandbox uid (RLIMIT_NPROC counts per real uid)."""
    import resource

    resource.setrlimit(resource.RLIMIT_NPROC, (NPROC_LIMIT, NPROC_LIMIT))

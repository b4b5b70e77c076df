"""Filesystem isolation of every sandbox process: the candidate child (which also runs the
compilers on the candidate's sources) and the reference worker.

The parent decides a :class:`Policy` per process (:func:`prepare`): read and execute the system
(/usr, /lib...), the Python runtime, this project's two packages and the backend's toolchains;
read a short list of /etc, /proc, /sys and /dev entries; write only the process's own working
directory (the reference worker writes nothing). Everything else is denied, reads included: the
memory lake, benchmark builds, the compile cache, other verifications, the user's home, other
processes' /proc entries (cmdline, environ). The launcher applies the policy (:func:`apply`) in
the forked process right before it executes the sandbox module, so its /proc/self is the final
process's and no thread exists yet: privileges first (:mod:`verifier.sandbox.privileges`), then
``no_new_privs`` and a Landlock domain (:mod:`verifier.sandbox.landlock`) that every thread and
compiler started later inherits. Where the kernel has no Landlock, the policy carries
``landlock_abi=0`` and the verdict warns "isolation unavailable: <why>" (never silently).
"""

from __future__ import annotations

import glob
import json
import os
import sys
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from verifier.sandbox import landlock, privileges

POLICY_ENV = "EVOKERNEL_SANDBOX_POLICY"
IMPORT_ROOT = ".imports"  # PYTHONPATH of a sandbox process (beside its workdir): links to the packages only
PACKAGES = ("verifier", "kernelbench_npu")
_PROJECT_ROOT = Path(__file__).resolve().parents[2]
SYSTEM_READ_EXEC = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_READ = (
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/nsswitch.conf",
    "/etc/passwd", "/etc/group", "/etc/ssl/openssl.cnf", "/etc/gcrypt",
    "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/filesystems", "/proc/devices", "/proc/sys/kernel",
    "/proc/sys/vm", "/proc/driver/nvidia", "/sys", "/dev/random", "/dev/urandom", "/dev/zero",
)
SYSTEM_WRITE = ("/dev/null", "/dev/full")
DEVICE_GLOBS = ("/dev/nvidia*", "/dev/nvidia-caps/*", "/dev/dri/*", "/dev/kfd", "/dev/davinci*",
                "/dev/devmm_svm", "/dev/hisi_hdc", "/dev/svm0")  # GPUs and NPUs (read, write, ioctl)


@dataclass(frozen=True)
class Policy:
    """What one sandbox process may touch, and as whom it runs (JSON-serialisable)."""

    read_exec: tuple[str, ...] = ()
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    landlock_abi: int = 0  # 0: no Landlock here (see ``unavailable``)
    unavailable: str = ""  # why the kernel offers no isolation
    uid: int | None = None
    gid: int | None = None
    groups: tuple[int, ...] = ()  # supplementary groups kept by a dropped uid: those of group-only devices
    strip_caps: bool = False
    notes: tuple[str, ...] = field(default=(), compare=False)  # mechanism, for the verdict
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, text: str) -> "Policy":
        data = json.loads(text)
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


@dataclass(frozen=True)
class Isolation:
    """How a sandbox process is isolated: mechanism and warnings (for the verdict)."""

    mechanism: str
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Prepared:
    """A prepared sandbox process: its policy and the directory its PYTHONPATH names."""

    policy: Policy
    import_root: Path


def runtime_read_exec(toolchains: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The Python runtime, this project's packages and the backend's toolchains."""
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              os.path.dirname(os.path.realpath(sys.executable))}
    packages = {str(_PROJECT_ROOT / name) for name in PACKAGES}
    return tuple(sorted({os.path.realpath(p) for p in (*python, *packages, *toolchains) if p}))


def _packages(extra: dict[str, str] | None) -> dict[str, str]:
    """{import name: directory} the sandbox's PYTHONPATH offers: this project's two, plus a backend's."""
    return {**{name: str(_PROJECT_ROOT / name) for name in PACKAGES}, **(extra or {})}


@lru_cache(maxsize=1)
def _devices() -> tuple[str, ...]:
    return tuple(sorted(p for pattern in DEVICE_GLOBS for p in glob.glob(pattern)))


def _device_groups(devices: tuple[str, ...]) -> tuple[int, ...]:
    """Groups a dropped uid needs to keep opening GPU/NPU nodes that are not world read-write."""
    groups = set()
    for path in devices:
        info = os.stat(path)
        if info.st_mode & 0o006 != 0o006 and info.st_mode & 0o060 == 0o060:
            groups.add(info.st_gid)
    return tuple(sorted(groups))


def build_policy(workdir: Path, writable: bool, toolchains: tuple[str, ...] = (),
                 packages: dict[str, str] | None = None, import_root: Path | None = None) -> Policy:
    """The policy of a process working in ``workdir`` (writable or not)."""
    abi, why = landlock.abi_version()
    runtime = runtime_read_exec((*toolchains, *(packages or {}).values()))
    plan = privileges.plan([*runtime, *SYSTEM_READ_EXEC], workdir)
    notes = [f"landlock ABI {abi}" if abi else "no filesystem isolation", plan.note]
    warnings = [f"isolation unavailable: {why}; the candidate can read and write whatever user "
                f"{os.geteuid()} can"] if not abi else []
    if plan.warning:
        warnings.append(plan.warning)
    read = (*SYSTEM_READ, str(workdir), *((str(import_root),) if import_root else ()))
    return Policy(read_exec=(*SYSTEM_READ_EXEC, *runtime), read=read,
                  write=(*SYSTEM_WRITE, *((str(workdir),) if writable else ())), devices=_devices(),
                  landlock_abi=abi, unavailable=why, uid=plan.uid, gid=plan.gid, strip_caps=plan.strip_caps,
                  groups=_device_groups(_devices()) if plan.uid is not None else (),
                  notes=tuple(n for n in notes if n), warnings=tuple(warnings))


def describe(policy: Policy) -> Isolation:
    return Isolation(", ".join(policy.notes), policy.warnings)


def prepare(workdir: Path, writable: bool, toolchains: tuple[str, ...] = (),
            packages: dict[str, str] | None = None) -> Prepared:
    """Parent side: the policy, the import root, and ownership of ``workdir`` for a dropped uid.
    ``packages``: {import name: directory} a backend outside the Python environment needs."""
    import_root = workdir.parent / f"{IMPORT_ROOT}-{workdir.name}"  # beside workdir: the candidate cannot swap it
    policy = build_policy(workdir, writable, toolchains, packages, import_root)
    import_root.mkdir(exist_ok=True)
    os.chmod(import_root, 0o755)
    for name, where in _packages(packages).items():
        link = import_root / name
        if not link.is_symlink():
            link.symlink_to(where, target_is_directory=True)
    if policy.uid is not None:
        _hand_over(workdir, policy.uid, policy.gid, writable)
    return Prepared(policy, import_root)


def _hand_over(workdir: Path, uid: int, gid: int, writable: bool) -> None:
    """A writable workdir belongs to the sandbox uid (mode 0700); a read-only one stays ours, 0755."""
    if not writable:
        os.chmod(workdir, 0o755)
        return
    for root, dirs, files in os.walk(workdir):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(root, name), uid, gid)
    os.chown(workdir, uid, gid)
    os.chmod(workdir, 0o700)


def apply(policy: Policy) -> None:
    """Child side (forked, single-threaded, before exec): privileges, no_new_privs, Landlock."""
    if policy.strip_caps:
        privileges.strip_capabilities()
    elif policy.uid is not None:
        privileges.limit_processes()
    _no_new_privs()
    if not policy.landlock_abi:
        return
    rules = landlock.Ruleset(policy.landlock_abi)
    for paths, rights in ((policy.read_exec, landlock.READ_EXEC), (policy.read, landlock.READ),
                          (policy.write, landlock.WRITE), (policy.devices, landlock.DEVICE)):
        for path in paths:
            rules.allow(path, rights)
    rules.allow("/proc/self", landlock.READ)  # resolved here: the pid the sandbox module will have
    pin = os.open("/proc/self", os.O_PATH | os.O_DIRECTORY)  # keeps that /proc entry (the rule's inode) alive
    os.set_inheritable(pin, True)
    rules.restrict()


def _no_new_privs() -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")

"""What each sandbox process may touch, decided by the monitor and applied before the process runs.

Three roles (DESIGN.md §4): the **runner** imports the candidate and calls ``forward``; the
**reference worker** runs the task's reference; the **builder** runs compilers on sources the monitor
handed it. The monitor builds one :class:`Policy` per process (:func:`build_policy`); the launcher
(verifier.sandbox.launcher) applies it, in this order, before the process's own code starts:

1. namespaces (launcher, :func:`enter_namespaces`): a new PID namespace (the process is its pid 1;
   when it dies every descendant dies with it; not for a process that opens a GPU:
   :func:`own_pid_namespace`) and a new network namespace (no interface is up:
   no address is reachable, loopback included, UDP as much as TCP). As root this is plain
   ``unshare``; otherwise a user namespace makes it possible; where neither works the launcher says
   so and the verdict warns "network isolation unavailable".
2. in the forked child before ``exec`` (:func:`apply`): death with the launcher
   (``PR_SET_PDEATHSIG``), resource limits (address space; data where it opens a GPU), privileges
   (verifier.sandbox.privileges: a dedicated unprivileged uid, or uid 0 stripped of every capability
   where the runtime is not readable by others), ``no_new_privs``, a Landlock domain (verifier.sandbox.landlock: read and execute the
   system, the Python runtime, this project's two packages and the backend's toolchains; read a
   short list of /etc, /proc, /sys and /dev entries; write only the process's own directory), and for
   the builder its seccomp filter (verifier.sandbox.seccomp); the runner and the reference worker
   install theirs themselves, after their own start-up and before any code they do not own.

Everything else is denied, reads included: the memory lake, benchmark builds, the compile cache,
other verifications, the user's home, other processes' /proc entries. Where the kernel has no
Landlock, ``landlock_abi=0`` and the verdict warns "isolation unavailable: <why>".
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import resource
import signal
import sys
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from verifier.sandbox import landlock, privileges

POLICY_ENV = "EVOKERNEL_SANDBOX_POLICY"
IMPORT_ROOT = ".imports"  # PYTHONPATH of a sandbox process (beside its workdir): links to the packages only
PACKAGES = ("verifier", "kernelbench_npu")
ROLES = ("runner", "reference", "builder")
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
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Policy:
    """What one sandbox process may touch, and as whom it runs (JSON-serialisable)."""

    role: str = "runner"
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
    memory_mb: int = 0  # RLIMIT_AS (0: unlimited)
    file_mb: int = 0  # RLIMIT_FSIZE (0: unlimited)
    cpus: tuple[int, ...] = ()  # CPU affinity: the runner and the reference worker share the same cores
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


def runtime_read_exec(toolchains: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The Python runtime, this project's packages and the backend's toolchains."""
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              os.path.dirname(os.path.realpath(sys.executable))}
    packages = {str(_PROJECT_ROOT / name) for name in PACKAGES}
    return tuple(sorted({os.path.realpath(p) for p in (*python, *packages, *toolchains) if p}))


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


def compute_cpus(threads: int) -> tuple[int, ...]:
    """The cores a runner and a reference worker with a budget of ``threads`` run on: the same ones, so a
    candidate can use no more parallelism than the reference, whatever threads it starts."""
    return tuple(sorted(os.sched_getaffinity(0))[:max(1, threads)])


def build_policy(role: str, workdir: Path, *, writable: bool, toolchains: tuple[str, ...] = (),
                 read: tuple[str, ...] = (), import_root: Path | None = None, devices: bool = False,
                 memory_mb: int = 0, file_mb: int = 0, cpus: tuple[int, ...] = ()) -> Policy:
    """The policy of a ``role`` process working in ``workdir``; ``read``: further read-only paths
    (the runner's library directory, the observer); ``devices``: GPU/NPU nodes open to it."""
    if role not in ROLES:
        raise ValueError(f"unknown sandbox role {role!r}")
    abi, why = landlock.abi_version()
    runtime = runtime_read_exec(toolchains)
    plan = privileges.plan([*runtime, *SYSTEM_READ_EXEC, *read], workdir)
    notes = [f"landlock ABI {abi}" if abi else "no filesystem isolation", plan.note]
    warnings = [f"isolation unavailable: {why}; the candidate can read and write whatever user "
                f"{os.geteuid()} can"] if not abi else []
    if plan.warning:
        warnings.append(plan.warning)
    readable = (*SYSTEM_READ, str(workdir), *read, *((str(import_root),) if import_root else ()))
    nodes = _devices() if devices else ()
    return Policy(role=role, read_exec=(*SYSTEM_READ_EXEC, *runtime), read=readable,
                  write=(*SYSTEM_WRITE, *((str(workdir),) if writable else ())), devices=nodes,
                  landlock_abi=abi, unavailable=why, uid=plan.uid, gid=plan.gid, strip_caps=plan.strip_caps,
                  groups=_device_groups(nodes) if plan.uid is not None else (), memory_mb=memory_mb, file_mb=file_mb,
                  cpus=cpus, notes=tuple(n for n in notes if n), warnings=tuple(warnings))


def describe(policy: Policy) -> Isolation:
    return Isolation(", ".join(policy.notes), policy.warnings)


def package_root() -> Path:
    """The directory that holds this project's two packages."""
    return _PROJECT_ROOT


def prepare_import_root(workdir: Path, packages: dict[str, str] | None = None) -> Path:
    """The PYTHONPATH directory of a sandbox process, beside its workdir (which it may not replace):
    links to this project's two packages and to a backend's package outside the environment."""
    import_root = workdir.parent / f"{IMPORT_ROOT}-{workdir.name}"
    import_root.mkdir(exist_ok=True)
    os.chmod(import_root, 0o755)
    for name, where in {**{n: str(_PROJECT_ROOT / n) for n in PACKAGES}, **(packages or {})}.items():
        link = import_root / name
        if not link.is_symlink():
            link.symlink_to(where, target_is_directory=True)
    return import_root


def hand_over(workdir: Path, policy: Policy, writable: bool) -> None:
    """A writable workdir belongs to the sandbox uid (mode 0700); a read-only one stays ours, 0755."""
    if policy.uid is None or not writable:
        os.chmod(workdir, 0o755 if not writable else 0o700)
        return
    for root, dirs, files in os.walk(workdir):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(root, name), policy.uid, policy.gid)
    os.chown(workdir, policy.uid, policy.gid)
    os.chmod(workdir, 0o700)


# ---- namespaces (the launcher, before it starts the process) ----------------------------------------
def own_pid_namespace(policy: Policy) -> bool:
    """Whether the process gets a PID namespace of its own: not where it opens a GPU. The CUDA driver names
    its threads at start-up by writing /proc/<pid>/task/<tid>/comm with the ids it sees, which in a new PID
    namespace (under the machine's /proc) name another process, and cuInit then fails (CUDA error 304).
    What the namespace adds is kept otherwise: its launcher is the subreaper of whatever the process starts
    and kills what is left once it has ended (verifier.sandbox.launcher), its filter kills fork and exec and
    signals to others (unless a Triton JIT needs ptxas), and Landlock hides every other process's /proc entry."""
    return not policy.devices


def enter_namespaces(pid: bool = True) -> None:
    """Unshare the network namespace, and unless ``pid`` is False the PID namespace, for the processes this
    one starts next (and the network for itself). Not root: inside a new user namespace that maps our own ids."""
    libc = ctypes.CDLL(None, use_errno=True)
    flags = CLONE_NEWNET | (CLONE_NEWPID if pid else 0)
    if os.geteuid() == 0 and libc.unshare(flags) == 0:
        return
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(CLONE_NEWUSER | flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare: {os.strerror(err)}")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


# ---- the forked child, before exec -------------------------------------------------------------------
def apply(policy: Policy) -> None:
    """Death with the launcher, limits, privileges, no_new_privs, Landlock, the builder's seccomp."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if policy.cpus:
        os.sched_setaffinity(0, policy.cpus)
    mb = 1 << 20
    if policy.memory_mb:  # a GPU driver reserves address space far beyond any such limit (CUDA's unified
        # addressing: the device's memory and the host's, mapped PROT_NONE): there, the limit is on data
        # (private writable memory: what malloc and the candidate's own mmap take), not on address space
        limit = resource.RLIMIT_DATA if policy.devices else resource.RLIMIT_AS
        resource.setrlimit(limit, (policy.memory_mb * mb,) * 2)
    if policy.file_mb:
        resource.setrlimit(resource.RLIMIT_FSIZE, (policy.file_mb * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if policy.strip_caps:
        privileges.strip_capabilities()
    elif policy.uid is not None:
        privileges.limit_processes()
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if policy.landlock_abi:
        rules = landlock.Ruleset(policy.landlock_abi)
        for paths, rights in ((policy.read_exec, landlock.READ_EXEC), (policy.read, landlock.READ),
                              (policy.write, landlock.WRITE), (policy.devices, landlock.DEVICE)):
            for path in paths:
                rules.allow(path, rights)
        rules.allow("/proc/self", landlock.READ)  # resolved here: the pid the process will have
        pins = ["/proc/self"]
        if policy.devices:
            # a GPU driver names its threads as it starts (cuInit writes /proc/<pid>/task/<tid>/comm) and fails
            # without it (CUDA error 304)
            rules.allow("/proc/self/task", landlock.THREAD_NAMES)
            pins.append("/proc/self/task")
        for path in pins:  # keeps those /proc entries (the rules' inodes) alive
            os.set_inheritable(os.open(path, os.O_PATH | os.O_DIRECTORY), True)
        rules.restrict()
    if policy.role == "builder":
        from verifier.sandbox import seccomp

        if seccomp.supported():
            seccomp.install(seccomp.BUILDER)

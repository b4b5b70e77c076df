"""What an escape test watches: the files a candidate must not touch, the loopback listeners it must
not reach, and the processes that must not outlive its verification.

* :func:`file_state`: a file's bytes, mode, modification time and extended attributes (Landlock
  governs bytes, not metadata: chmod, utime and setxattr need their own check).
* :class:`UdpListener` / :class:`TcpListener`: servers on 127.0.0.1 that record whatever reaches them.
  Landlock has no UDP rule, so a sandbox without its own network namespace lets datagrams through.
* :class:`Targets`: one case's own manifest.parquet and lake file, UDP and TCP listener and daemon
  name, so that what acted is attributed to the case that did it.
* :class:`Survivors`: the test process becomes a child subreaper (``PR_SET_CHILD_SUBREAPER``) so
  that a daemon double-forked out of a sandbox, whatever session or process group it moved to, is
  reparented to the test and shows up as its child; a live child that was not there before the
  verification (or any process named with the test's marker) survived it.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from escape_corpus import EVIL, POISON_TARGET

from verifier import cpu_native

PR_SET_CHILD_SUBREAPER = 36
# the process name (comm, at most 15 characters) the daemon cases give themselves: this test process's
# own, so that a concurrent pytest worker's daemons are never taken for ours
DAEMON_PREFIX = f"z23d{os.getpid() % 100000}-"


def with_native_source(candidate: str, source: str) -> str:
    """``candidate`` with the text of its (first) r\"\"\"...\"\"\" native source replaced by ``source``."""
    start = candidate.index('r"""') + 4
    return candidate[:start] + source + candidate[candidate.index('"""', start):]


def file_state(path: Path) -> str:
    """"sha256 mode mtime xattrs" of one file (the extended attributes sorted, with their values)."""
    info = os.stat(path)
    try:
        names = sorted(os.listxattr(path))
        xattrs = ",".join(f"{n}={os.getxattr(path, n).hex()}" for n in names)
    except OSError:
        xattrs = "?"
    return f"{hashlib.sha256(Path(path).read_bytes()).hexdigest()} {info.st_mode:o} {info.st_mtime_ns} [{xattrs}]"


def tree_state(roots: list[Path]) -> dict[str, str]:
    """{path: file_state} of every file below ``roots`` (a root may be a file)."""
    files = {}
    for root in roots:
        paths = [root] if root.is_file() else [Path(d) / f for d, _, names in os.walk(root) for f in names]
        for path in paths:
            files[str(path)] = file_state(path)
    return files


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What differs for each path of ``before`` (bytes, mode, mtime, xattrs; or that it is gone)."""
    out = []
    for path, was in before.items():
        now = after.get(path)
        if now == was:
            continue
        if now is None:
            out.append(f"{path}: removed")
            continue
        fields = [f"{name} {a[:12]} -> {b[:12]}" if name == "sha256" else f"{name} {a} -> {b}"
                  for name, a, b in zip(("sha256", "mode", "mtime", "xattrs"), was.split(" ", 3), now.split(" ", 3))
                  if a != b]
        out.append(f"{path}: {', '.join(fields)}")
    return out


class UdpListener:
    """Records every datagram sent to 127.0.0.1:port."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                data, _ = self.sock.recvfrom(65536)
            except OSError:
                return
            self.received.append(data)

    def close(self) -> None:
        self.sock.close()


class TcpListener:
    """Records every connection to 127.0.0.1:port (and the first bytes sent on it)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            conn.settimeout(2)
            try:
                self.received.append(b"connected:" + conn.recv(4096))
            except OSError:
                self.received.append(b"connected")
            conn.close()

    def close(self) -> None:
        self.server.close()


def _stat_fields(pid: str) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    open_, close = text.index("("), text.rindex(")")  # the name (comm) may hold spaces and parentheses
    return [text[:open_].strip(), text[open_ + 1:close]] + text[close + 2:].split()


def _describe(pid: str) -> str:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmdline = "?"
    fields = _stat_fields(pid) or ["?", "?", "?", "?", "?", "?"]
    return f"pid {pid} ({fields[1]}) session {fields[5]}: {cmdline[:160]}"


class Survivors:
    """Processes that outlive a verification (see the module doc). Use as a context manager around
    the verifications, then :meth:`check` when none is in flight."""

    def __init__(self, marker: str = "") -> None:
        self.marker = marker  # a process name (comm) an attacker's daemon gives itself, for attribution
        self.before: set[str] = set()

    def __enter__(self) -> "Survivors":
        libc = ctypes.CDLL(None, use_errno=True)
        self.subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        self.before = set(self._children())
        return self

    def __exit__(self, *exc) -> None:
        ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        self._reap_orphans()

    def _children(self) -> list[str]:
        """Live (not zombie) children of this process and of its fork servers (whose children are the
        launchers of the processes they forked; the servers themselves are not counted)."""
        from verifier.sandbox.forked import server_pids

        servers = {str(pid) for pid in server_pids()}
        parents = {str(os.getpid()), *servers}
        out = []
        for pid in os.listdir("/proc"):
            fields = _stat_fields(pid) if pid.isdigit() else None
            if fields and fields[3] in parents and fields[2] != "Z" and pid not in servers:
                out.append(pid)
        return out

    def named(self, prefix: str) -> list[str]:
        """Live processes anywhere on the machine whose name starts with ``prefix``."""
        out = []
        for pid in os.listdir("/proc"):
            fields = _stat_fields(pid) if pid.isdigit() else None
            if fields and fields[1].startswith(prefix) and fields[2] != "Z":
                out.append(pid)
        return out

    def check(self, grace_s: float = 1.0) -> list[str]:
        """Descriptions of every process that survived (killed here, so that one test's escape does not
        leak into the next). Waits ``grace_s`` first: a killed process group takes a moment to go."""
        from verifier.monitor.pool import POOL

        time.sleep(grace_s)
        spares = {str(pid) for pid in POOL.spare_launcher_pids()}  # booted for the next verification, unused
        pids = set(self._children()) - self.before - spares
        if self.marker:
            pids |= set(self.named(self.marker))
        found = [_describe(pid) for pid in sorted(pids)]
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        return found

    def _reap_orphans(self) -> None:
        """Collect the zombies reparented here while this was a subreaper (sandbox grandchildren whose
        launcher died first); the subprocess module never waits for them."""
        me = str(os.getpid())
        for pid in os.listdir("/proc"):
            fields = _stat_fields(pid) if pid.isdigit() else None
            if fields and fields[3] == me and fields[2] == "Z" and pid not in self.before:
                try:
                    os.waitpid(int(pid), os.WNOHANG)
                except ChildProcessError:
                    pass


@dataclass
class Targets:
    """One issue-23 case's own targets: a benchmark manifest and a lake file, a UDP and a TCP listener."""

    root: Path
    fill: dict[str, str]
    udp: UdpListener
    tcp: TcpListener

    @classmethod
    def create(cls, root: Path, name: str, index: int) -> "Targets":
        root.mkdir(parents=True)
        pq.write_table(pa.table({"task_id": ["L1/relu"], "note": [name]}), root / "manifest.parquet")
        pq.write_table(pa.table({"item": [name] * 16}), root / "items-0001.parquet")
        udp, tcp = UdpListener(), TcpListener()
        fill = {"CASE": name, "CASE_MANIFEST": str(root / "manifest.parquet"),
                "CASE_LAKE": str(root / "items-0001.parquet"),
                "UDP_PORT": str(udp.port), "TCP_PORT": str(tcp.port), "DAEMON_NAME": f"{DAEMON_PREFIX}{index}",
                "POISON_KEY": cpu_native.source_key(POISON_TARGET), "POISON_SOURCE": POISON_TARGET, "EVIL_SOURCE": EVIL}
        return cls(root, fill, udp, tcp)

    def state(self) -> dict[str, str]:
        return tree_state([self.root])

    def problems(self, before: dict[str, str]) -> list[str]:
        """What reached these targets since ``before`` (their :meth:`state` then)."""
        found = []
        if moved := changed(before, self.state()):
            found.append(f"changed {moved}")
        if self.udp.received:
            found.append(f"sent {len(self.udp.received)} UDP datagram(s) to loopback: {self.udp.received[0][:300]!r}")
        if self.tcp.received:
            found.append(f"reached a loopback TCP server: {self.tcp.received[0][:300]!r}")
        return found

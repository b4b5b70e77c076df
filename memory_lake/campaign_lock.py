"""One writer per campaign id: a lease that the process running a campaign holds while it runs.

Two processes on one campaign id would both resume from what the lake holds and store every
attempt twice. So the campaign's process takes a lease first; another process asking for the same
id is refused with one line, "campaign X is running on HOST pid N".

The stale rule (a holder that crashed cannot release): the holder renews its lease's heartbeat every
HEARTBEAT_S seconds. A lease is taken over at once when its holder is on this host and its process
is gone (no such pid, or a pid reused by a process started at another time or boot), or when it
was taken on another lake (the lease file came along with a copy of the lake); a holder on another
host, after STALE_S seconds without a heartbeat. Taking over is a compare-and-set on the lease's
token, so of two processes that find the same stale lease one wins.

Where the leases are, for both catalog kinds:
- a SQLite catalog (directory lakes): ``<catalog stem>.campaigns.sqlite`` beside the catalog (one
  machine; a file of its own, so heartbeats never wait for the catalog's commits);
- a PostgreSQL catalog: the table ``evokernel_campaign_leases`` in its database, which every machine
  sharing the lake reaches; times are the server's clock.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import psycopg

from memory_lake.errors import LakeError
from memory_lake.storage import Location

HEARTBEAT_S = 10.0
STALE_S = 60.0
TABLE = "evokernel_campaign_leases"
COLUMNS = "campaign_id, host, pid, proc, lake, token, since, heartbeat"
CREATE = (f"CREATE TABLE IF NOT EXISTS {TABLE} (campaign_id TEXT PRIMARY KEY, host TEXT, pid INTEGER, "
          "proc TEXT, lake TEXT, token TEXT, since DOUBLE PRECISION, heartbeat DOUBLE PRECISION)")


class CampaignRunning(LakeError):
    """Another live process holds the campaign id."""


@dataclass(frozen=True)
class Lease:
    campaign_id: str
    host: str
    pid: int
    proc: str  # "<boot id>:<start time in ticks>": tells a live holder from a reused pid
    lake: str  # the catalog file it was taken on (SQLite catalogs): a copy's lease is not ours
    token: str
    since: float  # epoch seconds
    age_s: float = 0.0  # seconds since its last heartbeat, when read


def this_process(campaign_id: str, lake: str) -> Lease:
    now = time.time()
    return Lease(campaign_id, socket.gethostname(), os.getpid(), process_identity(os.getpid()) or "", lake,
                 uuid.uuid4().hex, now)


class CampaignLease:
    """A held lease: renewed in a daemon thread until :meth:`release` (also a context manager)."""

    def __init__(self, store: "SqliteLeases | PostgresLeases", lease: Lease) -> None:
        self.lease = lease
        self.lost = threading.Event()  # set when a heartbeat found the lease taken over
        self._store = store
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease {lease.campaign_id}", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                if not self._store.heartbeat(self.lease):
                    self.lost.set()
                    return
            except (sqlite3.Error, psycopg.Error):  # a busy or briefly unreachable store: next beat
                continue

    def release(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        try:
            self._store.delete(self.lease)
        except (sqlite3.Error, psycopg.Error):  # the lease goes stale and is taken over
            pass
        finally:
            self._store.close()

    def __enter__(self) -> "CampaignLease":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def hold(location: Location, campaign_id: str) -> CampaignLease:
    """Take the campaign's lease, or raise CampaignRunning naming the live holder."""
    store = open_store(location)
    me = this_process(campaign_id, store.lake)
    try:
        for _ in range(10):  # each round loses only to another process that took or renewed the lease
            found = store.read(campaign_id)
            if found is None:
                if store.insert(me):
                    return CampaignLease(store, me)
            elif not stale(found, store.lake):
                raise CampaignRunning(running_line(found))
            elif store.replace(found, me):
                return CampaignLease(store, me)
    except BaseException:
        store.close()
        raise
    store.close()
    raise LakeError(f"campaign {campaign_id}: could not take its lease (other processes keep taking it)")


def holder(location: Location, campaign_id: str) -> Lease | None:
    """The live holder of a campaign's lease, if any (a stale lease counts as none)."""
    store = open_store(location)
    try:
        found = store.read(campaign_id)
    finally:
        store.close()
    return found if found is not None and not stale(found, store.lake) else None


def running_line(lease: Lease) -> str:
    since = datetime.fromtimestamp(lease.since, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (f"campaign {lease.campaign_id} is running on {lease.host} pid {lease.pid} (since {since}; one "
            "process per campaign id: wait for it, stop it, or use another --campaign-id)")


def stale(lease: Lease, lake: str) -> bool:
    if lease.lake != lake:
        return True
    if lease.host == socket.gethostname():
        return not _alive(lease)
    return lease.age_s > STALE_S


def _alive(lease: Lease) -> bool:
    if lease.proc:  # Linux: the same process, not a later one that got its pid
        return process_identity(lease.pid) == lease.proc
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def process_identity(pid: int) -> str | None:
    """"<boot id>:<start ticks>" of a running process (None: no such process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state is field 3
    return f"{boot}:{fields[19]}"


def open_store(location: Location) -> "SqliteLeases | PostgresLeases":
    if location.kind == "postgres":
        return PostgresLeases(location.catalog[len("ducklake:postgres:"):])
    catalog = location.sqlite_catalog
    assert catalog is not None
    return SqliteLeases(catalog.with_name(f"{catalog.stem}.campaigns.sqlite"), str(catalog))


class SqliteLeases:
    """Leases in a SQLite file beside a SQLite catalog (times: this host's clock)."""

    def __init__(self, path: Path, lake: str) -> None:
        self.lake = lake
        self._db = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(CREATE)

    def read(self, campaign_id: str) -> Lease | None:
        with self._lock:
            row = self._db.execute(f"SELECT {COLUMNS} FROM {TABLE} WHERE campaign_id = ?", (campaign_id,)).fetchone()
        return None if row is None else Lease(*row[:7], age_s=time.time() - float(row[7]))

    def insert(self, lease: Lease) -> bool:
        with self._lock:
            return self._db.execute(f"INSERT OR IGNORE INTO {TABLE} ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                    (*_values(lease), time.time())).rowcount == 1

    def replace(self, old: Lease, new: Lease) -> bool:
        with self._lock:
            return self._db.execute(f"UPDATE {TABLE} SET host = ?, pid = ?, proc = ?, lake = ?, token = ?, since = ?, "
                                    "heartbeat = ? WHERE campaign_id = ? AND token = ?",
                                    (*_values(new)[1:], time.time(), old.campaign_id, old.token)).rowcount == 1

    def heartbeat(self, lease: Lease) -> bool:
        with self._lock:
            return self._db.execute(f"UPDATE {TABLE} SET heartbeat = ? WHERE campaign_id = ? AND token = ?",
                                    (time.time(), lease.campaign_id, lease.token)).rowcount == 1

    def delete(self, lease: Lease) -> None:
        with self._lock:
            self._db.execute(f"DELETE FROM {TABLE} WHERE campaign_id = ? AND token = ?", (lease.campaign_id, lease.token))

    def close(self) -> None:
        with self._lock:
            self._db.close()


class PostgresLeases:
    """Leases in the PostgreSQL catalog's database (times: the server's clock)."""

    NOW = "extract(epoch from clock_timestamp())"

    def __init__(self, conninfo: str) -> None:
        self.lake = ""
        try:
            self._db = psycopg.connect(conninfo, autocommit=True, connect_timeout=10)
        except psycopg.OperationalError as exc:
            raise LakeError(f"lake catalog: cannot reach it for the campaign lease ({str(exc).strip().splitlines()[0]})") from None
        self._lock = threading.Lock()
        for attempt in (1, 2):
            try:
                self._db.execute(CREATE)
                break
            except psycopg.errors.UniqueViolation:  # two processes created the table at once
                if attempt == 2:
                    raise

    def read(self, campaign_id: str) -> Lease | None:
        with self._lock:
            row = self._db.execute(f"SELECT {COLUMNS.replace('heartbeat', f'{self.NOW} - heartbeat')} FROM {TABLE} "
                                   "WHERE campaign_id = %s", (campaign_id,)).fetchone()
        return None if row is None else Lease(*row[:7], age_s=float(row[7]))

    def insert(self, lease: Lease) -> bool:
        with self._lock:
            return self._db.execute(f"INSERT INTO {TABLE} ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, {self.NOW}) "
                                    "ON CONFLICT (campaign_id) DO NOTHING", _values(lease)).rowcount == 1

    def replace(self, old: Lease, new: Lease) -> bool:
        with self._lock:
            return self._db.execute(f"UPDATE {TABLE} SET host = %s, pid = %s, proc = %s, lake = %s, token = %s, "
                                    f"since = %s, heartbeat = {self.NOW} WHERE campaign_id = %s AND token = %s",
                                    (*_values(new)[1:], old.campaign_id, old.token)).rowcount == 1

    def heartbeat(self, lease: Lease) -> bool:
        with self._lock:
            return self._db.execute(f"UPDATE {TABLE} SET heartbeat = {self.NOW} WHERE campaign_id = %s AND token = %s",
                                    (lease.campaign_id, lease.token)).rowcount == 1

    def delete(self, lease: Lease) -> None:
        with self._lock:
            self._db.execute(f"DELETE FROM {TABLE} WHERE campaign_id = %s AND token = %s",
                             (lease.campaign_id, lease.token))

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _values(lease: Lease) -> tuple:
    plain = replace(lease, age_s=0.0)
    return (plain.campaign_id, plain.host, plain.pid, plain.proc, plain.lake, plain.token, plain.since)

"""One writer per campaign id, on both catalog kinds, with real processes: a second process is
refused with one line naming the holder's host and pid; a holder killed with SIGKILL leaves a lease
the next process takes over at once; one on another host only after its heartbeat went stale; a
copied lake does not inherit its original's leases."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_lake import Lake, campaign_lock
from memory_lake.campaign_lock import CampaignRunning
from memory_lake.storage import parse

ROOT = Path(__file__).resolve().parents[2]
HOLD = ("import sys, time\n"
        "from memory_lake import Lake\n"
        "lake = Lake.open(sys.argv[1])\n"
        "with lake.hold_campaign(sys.argv[2]):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(600)\n")


def _holder(root: str, campaign_id: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, root, campaign_id], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.readline().strip() == "held"
    return proc


def _try_hold(root: str, campaign_id: str) -> subprocess.CompletedProcess:
    code = ("import sys\nfrom memory_lake import Lake, LakeError\n"
            "try:\n    Lake.open(sys.argv[1]).hold_campaign(sys.argv[2]).release()\n"
            "except LakeError as exc:\n    print(exc); sys.exit(3)\nprint('took it')\n")
    return subprocess.run([sys.executable, "-c", code, root, campaign_id], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)


def test_a_second_process_is_refused_and_a_killed_holder_is_taken_over(catalog_factory):
    root = catalog_factory.new()
    Lake.create(root, "cpu").close()
    holder = _holder(root, "camp-1")
    try:
        second = _try_hold(root, "camp-1")
        assert second.returncode == 3, second.stdout + second.stderr
        line = second.stdout.strip()
        assert line.startswith(f"campaign camp-1 is running on {socket.gethostname()} pid {holder.pid} (since ")
        assert "\n" not in line
        assert _try_hold(root, "camp-2").stdout.strip() == "took it"  # other ids are free
    finally:
        holder.send_signal(signal.SIGKILL)  # a crash: the lease is never released
        holder.wait()
    assert _try_hold(root, "camp-1").stdout.strip() == "took it"  # its process is gone: taken over at once


def test_a_holder_on_another_host_is_waited_for_until_its_heartbeat_is_stale(catalog_factory):
    root = catalog_factory.new()
    Lake.create(root, "cpu").close()
    location = parse(root)
    store = campaign_lock.open_store(location)
    elsewhere = campaign_lock.Lease("camp", "other-host", 4242, "boot:1", store.lake, "token-1", time.time())
    assert store.insert(elsewhere)
    store.close()
    with pytest.raises(CampaignRunning, match="campaign camp is running on other-host pid 4242"):
        campaign_lock.hold(location, "camp")
    _age(location, "camp", campaign_lock.STALE_S + 5)
    with campaign_lock.hold(location, "camp") as lease:
        assert lease.lease.host == socket.gethostname()
        assert campaign_lock.holder(location, "camp").pid == os.getpid()
    assert campaign_lock.holder(location, "camp") is None  # released


def test_a_copied_lake_does_not_inherit_its_originals_lease(tmp_path):
    a, b = tmp_path / "A", tmp_path / "B"
    Lake.create(a, "cpu").close()
    holder = _holder(str(a), "camp")
    try:
        subprocess.run(["cp", "-a", str(a), str(b)], check=True)
        assert _try_hold(str(b), "camp").stdout.strip() == "took it"
        assert _try_hold(str(a), "camp").returncode == 3
    finally:
        holder.kill()
        holder.wait()


def _age(location, campaign_id: str, seconds: float) -> None:
    """Move a lease's last heartbeat ``seconds`` into the past (its holder stopped beating)."""
    if location.kind == "postgres":
        import psycopg

        with psycopg.connect(location.catalog[len("ducklake:postgres:"):], autocommit=True) as db:
            db.execute(f"UPDATE {campaign_lock.TABLE} SET heartbeat = heartbeat - %s WHERE campaign_id = %s",
                       (seconds, campaign_id))
        return
    import sqlite3

    catalog = location.sqlite_catalog
    with sqlite3.connect(catalog.with_name(f"{catalog.stem}.campaigns.sqlite")) as db:
        db.execute(f"UPDATE {campaign_lock.TABLE} SET heartbeat = heartbeat - ? WHERE campaign_id = ?",
                   (seconds, campaign_id))

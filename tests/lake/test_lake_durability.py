"""Durability on real processes and every catalog kind: concurrent appends and Q updates, two
writers sharing one lake, SIGKILL mid-transaction, compaction (results unchanged, safe while
others write, a killed compaction changes nothing)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lake_fixtures import SEEDS, sample_items

from memory_lake import Lake, ValueUpdate

WRITER = str(Path(__file__).with_name("lake_writer.py"))
ROOT = Path(__file__).resolve().parents[2]


def spawn(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, WRITER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def count(lake: Lake, sql: str, params=None) -> int:
    return lake.query(sql, params).column(0)[0].as_py()


def test_two_processes_appending_lose_nothing(catalog_lake):
    lake = catalog_lake
    writers = [spawn("append", lake.root, tag, "15", "20") for tag in ("a", "b")]
    for w in writers:
        _, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
    assert count(lake, "SELECT count(*) FROM attempts") == 2 * 15 * 20
    assert count(lake, "SELECT count(DISTINCT attempt_id) FROM attempts") == 600


def test_concurrent_q_updates_form_one_sequence(catalog_lake):
    lake = catalog_lake
    (item,) = lake.add_items(sample_items(1))
    writers = [spawn("update", lake.root, item, "12") for _ in range(2)]
    for w in writers:
        _, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
    rows = lake.query("SELECT seq, q_before, q_after FROM value_updates ORDER BY seq").to_pylist()
    assert [r["seq"] for r in rows] == list(range(1, 25))
    for earlier, later in zip(rows, rows[1:]):  # every update saw the one before it: no lost update
        assert later["q_before"] == pytest.approx(earlier["q_after"])
    assert lake.current_q([item], 1)[item] == pytest.approx(rows[-1]["q_after"])


def test_writer_killed_mid_batch_leaves_a_readable_lake(catalog_lake):
    lake = catalog_lake
    writer = spawn("append", lake.root, "k", "100000", "5000")
    committed = -1
    for line in writer.stdout:
        committed = int(line.split()[1])
        if committed >= 2:
            time.sleep(0.05)  # let it start the next batch
            break
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=30)
    reopened = Lake.open(lake.root)
    rows = count(reopened, "SELECT count(*) FROM attempts")
    assert rows % 5000 == 0 and rows >= (committed + 1) * 5000  # whole batches only, none lost
    assert count(reopened, "SELECT count(DISTINCT attempt_id) FROM attempts") == rows


def test_q_writer_killed_mid_update_loses_nothing_committed_and_blocks_no_one(catalog_lake):
    lake = catalog_lake
    (item,) = lake.add_items(sample_items(1))
    writer = spawn("update", lake.root, item, "1000")
    for line in writer.stdout:
        if int(line.split()[1]) >= 2:
            break
    os.kill(writer.pid, signal.SIGKILL)  # most likely inside its next update transaction
    writer.wait(timeout=30)
    rows = lake.query("SELECT seq, q_before, q_after FROM value_updates ORDER BY seq").to_pylist()
    assert len(rows) >= 3 and [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    assert all(b["q_before"] == pytest.approx(a["q_after"]) for a, b in zip(rows, rows[1:]))
    after = lake.update_values([ValueUpdate(item, 1, 1.0, 0.5, "next")])  # nothing held by the dead writer
    assert after[item] == pytest.approx(rows[-1]["q_after"] + 0.5 * (1.0 - rows[-1]["q_after"]))


def test_two_writers_share_one_lake(catalog_lake):
    """Items, Q updates and retrieval across two processes at once: no lost update, no duplicate
    id, and each process retrieves the items the other wrote."""
    lake = catalog_lake
    (shared,) = lake.add_items(sample_items(1))
    writers = [spawn("share", lake.root, tag, other, shared, "8") for tag, other in (("a", "b"), ("b", "a"))]
    outputs = []
    for w in writers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0, err[-2000:]
        outputs.append(out)
    rows = lake.query("SELECT seq, q_before, q_after FROM value_updates ORDER BY seq").to_pylist()
    assert [r["seq"] for r in rows] == list(range(1, 17))
    for earlier, later in zip(rows, rows[1:]):
        assert later["q_before"] == pytest.approx(earlier["q_after"])
    assert count(lake, "SELECT count(*) FROM items") == count(lake, "SELECT count(DISTINCT item_id) FROM items")
    assert count(lake, "SELECT count(*) FROM items WHERE title LIKE 'a note %' OR title LIKE 'b note %'") == 16
    saw = [line.split()[1] for out in outputs for line in out.splitlines() if line.startswith("saw ")]
    titles = lake.query("SELECT item_id, title FROM items WHERE list_contains($ids, item_id) ORDER BY title",
                        {"ids": saw}).column("title").to_pylist()
    assert [t.split()[0] for t in titles] == ["a", "b"]  # a saw one of b's items and b one of a's


QUERIES = (
    "SELECT item_id, kind, title, body FROM items ORDER BY item_id",
    "SELECT * FROM item_values ORDER BY item_id, stage",
    "SELECT * EXCLUDE (created_at) FROM value_updates ORDER BY seq",
    "SELECT attempt_id, count(*) AS n FROM retrievals GROUP BY attempt_id ORDER BY attempt_id",
    "SELECT term, item_id, tf FROM postings ORDER BY term, item_id",
)


def filled_lake(uri: str) -> Lake:
    lake = Lake.create(uri, "cpu", SEEDS)
    for _ in range(4):
        ids = lake.add_items(sample_items(6))
        lake.update_values([ValueUpdate(i, 1 + k % 2, 0.5, 0.3, "a") for k, i in enumerate(ids)])
        lake.retrieve(_request())
    return lake


def _request():
    from memory_lake import RetrievalRequest

    return RetrievalRequest("r", "L1_0", "matmul kernel tile", "matmul", "cpu", 1, n=3, lam=2, epsilon=0.3, seed=1)


def snapshot(lake: Lake) -> list:
    return [lake.query(q).to_pylist() for q in QUERIES]


def test_compaction_preserves_query_results_retrieval_and_time_travel(catalog_factory):
    lake = filled_lake(catalog_factory.new())
    retrieved = lake.retrieve(_request(), record=False)
    before = snapshot(catalog_lake)
    old = lake.snapshots()[-1].snapshot_id
    result = lake.compact()
    assert result.files_after < result.files_before
    assert all(len(lake.files().paths(t)) <= 1 for t in ("items", "docs", "postings"))
    assert snapshot(catalog_lake) == before
    assert snapshot(Lake.open(lake.root)) == before
    assert lake.retrieve(_request(), record=False) == retrieved
    assert [lake.query(q, as_of=old).to_pylist() for q in QUERIES] == before


def test_compaction_while_others_write_and_killed_compactions_change_nothing(catalog_lake):
    lake = catalog_lake
    (item,) = lake.add_items(sample_items(1))
    writers = [spawn("append", lake.root, "w", "8", "50"), spawn("update", lake.root, item, "8")]
    compactor = spawn("compact", lake.root, "2")
    out, err = compactor.communicate(timeout=300)
    assert compactor.returncode == 0, err[-2000:]
    for w in writers:
        _, err = w.communicate(timeout=300)
        assert w.returncode == 0, err[-2000:]
    assert count(lake, "SELECT count(DISTINCT attempt_id) FROM attempts") == 400
    assert count(lake, "SELECT max(seq) FROM value_updates") == 8
    before = snapshot(catalog_lake)
    for delay in (0.05, 0.4, 1.0):  # SIGKILL a compaction somewhere in its steps
        killed = spawn("compact", lake.root, "1")
        assert killed.stdout.readline().strip() == "open"
        time.sleep(delay)
        killed.kill()
        killed.wait(timeout=60)
        assert snapshot(Lake.open(lake.root)) == before
    Lake.open(lake.root).compact()
    assert snapshot(Lake.open(lake.root)) == before

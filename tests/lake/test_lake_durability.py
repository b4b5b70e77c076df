"""Durability on real processes: concurrent appends and Q updates, SIGKILL mid-batch,
compaction (results unchanged, crash at every step recoverable)."""

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
from memory_lake.compaction import recover

WRITER = str(Path(__file__).with_name("lake_writer.py"))
ROOT = Path(__file__).resolve().parents[2]


def spawn(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, WRITER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def count(lake: Lake, sql: str, params=None) -> int:
    return lake.query(sql, params).column(0)[0].as_py()


def test_two_processes_appending_lose_nothing(lake):
    writers = [spawn("append", lake.root, tag, "15", "20") for tag in ("a", "b")]
    for w in writers:
        _, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
    assert count(lake, "SELECT count(*) FROM attempts") == 2 * 15 * 20
    assert count(lake, "SELECT count(DISTINCT attempt_id) FROM attempts") == 600


def test_concurrent_q_updates_form_one_sequence(lake):
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


def test_writer_killed_mid_batch_leaves_a_readable_lake(lake):
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


QUERIES = (
    "SELECT item_id, kind, title, body FROM items ORDER BY item_id",
    "SELECT * FROM item_values ORDER BY item_id, stage",
    "SELECT * EXCLUDE (created_at) FROM value_updates ORDER BY seq",
    "SELECT attempt_id, count(*) AS n FROM retrievals GROUP BY attempt_id ORDER BY attempt_id",
    "SELECT term, item_id, tf FROM postings ORDER BY term, item_id",
)


def filled_lake(root: Path) -> Lake:
    lake = Lake.create(root, "cpu", SEEDS)
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


def test_compaction_preserves_query_results_and_retrieval(tmp_path):
    lake = filled_lake(tmp_path / "lake")
    retrieved = lake.retrieve(_request())
    before = snapshot(lake)
    result = lake.compact()
    assert result.files_after < result.files_before
    assert all(len(files) <= 1 for files in lake.storage.visible_files().values())
    assert snapshot(lake) == before
    assert snapshot(Lake.open(lake.root)) == before
    assert lake.retrieve(_request()) == retrieved


@pytest.mark.parametrize("step", ["merged", "journal", "renamed:items", "renamed:postings", "deleted-source"])
def test_compaction_killed_at_any_step_changes_no_result(tmp_path, step):
    lake = filled_lake(tmp_path / "lake")
    before = snapshot(lake)
    child = spawn("compact-kill", lake.root, step)
    child.communicate(timeout=120)
    assert child.returncode == -signal.SIGKILL
    assert snapshot(Lake.open(lake.root)) == before  # readers resolve the journal
    recover(lake.storage)
    assert not lake.storage.journals()
    assert snapshot(Lake.open(lake.root)) == before
    Lake.open(lake.root).compact()
    assert snapshot(Lake.open(lake.root)) == before


def test_fsspec_memory_root_works_end_to_end():
    root = f"memory://lake-{os.getpid()}-{time.time_ns()}"
    lake = Lake.create(root, "cpu", SEEDS)
    ids = lake.add_items(sample_items(4))
    lake.update_values([ValueUpdate(ids[0], 1, 1.0, 0.5)])
    assert lake.current_q([ids[0]], 1)[ids[0]] == 0.5
    assert len(lake.retrieve(_request())) == len(SEEDS) + 3
    lake.compact()
    assert count(Lake.open(root), "SELECT count(*) FROM items") == len(SEEDS) + 4

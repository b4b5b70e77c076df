"""Directory lakes are self-contained: a copied lake (`cp -a`) and a moved one (`mv`) each open and
write only their own files, compaction with --expire-older-than included (what it expired is
reported); lakes that recorded an absolute data path are migrated when that is safe; a directory
lake whose data lies outside it is refused with one line, and opens as a ducklake:sqlite: catalog."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from lake_fixtures import SEEDS, sample_items
from typer.testing import CliRunner

from cli.main import app
from memory_lake import Lake, LakeError
from memory_lake.engine import new_connection

runner = CliRunner()


def _recorded(root: Path) -> str:
    """Read through DuckDB's SQLite reader, as the lake does (Python's sqlite3 3.40 calls some
    catalogs DuckDB's SQLite wrote "malformed" that DuckDB and newer SQLite read)."""
    with new_connection(("sqlite",)) as db:
        db.execute(f"ATTACH '{root / 'catalog.sqlite'}' AS c (TYPE sqlite, READ_ONLY)")
        return db.execute("SELECT value FROM c.ducklake_metadata WHERE key = 'data_path'").fetchone()[0]


def _record(root: Path, data_path: str) -> None:
    """What a lake made by an older version recorded (an absolute data path)."""
    with sqlite3.connect(root / "catalog.sqlite") as db:
        db.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'", (data_path,))


def _files(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in (root / "data").rglob("*") if p.is_file()}


def _lake_with_history(root: Path) -> Lake:
    lake = Lake.create(root, "cpu", SEEDS)
    for i in range(4):
        lake.add_items(sample_items(3))
        lake.append("attempts", [{"attempt_id": f"{root.name}-{i}", "code": "x"}])
    return lake


def _count(lake: Lake, table: str) -> int:
    return lake.query(f"SELECT count(*) AS n FROM {table}").column("n")[0].as_py()


@pytest.mark.parametrize("legacy", [False, True], ids=["relative", "older-absolute"])
def test_a_copy_reads_writes_and_expires_only_its_own_files(tmp_path, legacy):
    a, b = tmp_path / "A", tmp_path / "B"
    lake = _lake_with_history(a)
    lake.compact()  # leaves files only older snapshots use: --expire-older-than deletes them later
    lake.close()
    if legacy:
        _record(a, f"{a}/data/")
    assert _recorded(a) == (f"{a}/data/" if legacy else "data/")
    subprocess.run(["cp", "-a", str(a), str(b)], check=True)
    a_files = _files(a)
    copy = Lake.open(b)
    assert _recorded(b) == "data/"  # migrated on open (its files are all in B/data)
    copy.add_items(sample_items(2))
    copy.append("attempts", [{"attempt_id": "only-in-b"}])
    time.sleep(1.1)
    result = runner.invoke(app, ["lake", "compact", "--lake", str(b), "--expire-older-than", "1s"])
    assert result.exit_code == 0, result.output
    assert "expired " in result.output and "time travel now starts at snapshot" in result.output
    assert "unused for 1 h" in result.output
    assert _files(a) == a_files  # A: not one file written, changed or deleted
    original = Lake.open(a)
    assert _count(original, "attempts") == 4 and _count(original, "items") == len(SEEDS) + 12
    assert original.query("SELECT count(*) AS n FROM item_values").column("n")[0].as_py() > 0
    original.close()
    assert _count(copy, "attempts") == 5 and set(_files(b)) - set(a_files)  # B wrote its own files
    copy.close()


def test_a_moved_lake_works(tmp_path):
    m, m2 = tmp_path / "M", tmp_path / "M2"
    _lake_with_history(m).close()
    _record(m, f"{m}/data/")  # an older lake: absolute path, which moves with nothing
    shutil.move(str(m), str(m2))
    moved = Lake.open(m2)
    assert _count(moved, "attempts") == 4
    moved.append("attempts", [{"attempt_id": "after-move"}])
    assert _count(moved, "attempts") == 5 and _recorded(m2) == "data/"
    assert not m.exists()
    moved.close()
    for args in (["stats"], ["query", "SELECT count(*) FROM attempts"], ["snapshots"]):
        assert runner.invoke(app, ["lake", *args[:1], "--lake", str(m2), *args[1:]]).exit_code == 0, args


def test_a_lake_whose_catalog_another_process_is_writing_opens_without_recording_its_data_path(tmp_path):
    """A progress bar or a query opening a lake whose creator still writes its catalog (the first moments of
    a campaign, before the creator's own open records ``data/``) found "database is locked" in the
    migration's one write, and failed (a CI run). It reads the lake from its own ``data/`` and leaves the
    record to a later open."""
    import sys

    root = tmp_path / "L"
    _lake_with_history(root).close()
    _record(root, f"{root}/data/")  # as DuckLake records it when it creates a catalog
    holder = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time\n"
                               f"db = sqlite3.connect({str(root / 'catalog.sqlite')!r}, isolation_level=None)\n"
                               "db.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\ntime.sleep(120)\n"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert Lake.exists(root)
    finally:
        holder.kill()
        holder.wait()
    assert _recorded(root) == f"{root}/data/"  # left as it was while locked
    lake = Lake.open(root)
    assert _count(lake, "attempts") == 4 and _recorded(root) == "data/"  # the next open records it
    lake.close()


def test_a_directory_lake_with_its_data_elsewhere_is_refused_unless_its_catalog_says_so(tmp_path):
    root, elsewhere = tmp_path / "lake", tmp_path / "elsewhere"
    catalog_uri = f"ducklake:sqlite:{root / 'catalog.sqlite'}"
    shared = Lake.create(catalog_uri, "cpu", SEEDS, data_path=str(elsewhere))
    shared.append("attempts", [{"attempt_id": "a1"}])
    shared.close()
    with pytest.raises(LakeError) as refused:
        Lake.open(root)
    message = str(refused.value)
    assert f"records the data path {elsewhere}/" in message and "outside the lake" in message
    assert f"--lake ducklake:sqlite:{root / 'catalog.sqlite'}" in message and "\n" not in message
    result = runner.invoke(app, ["lake", "query", "--lake", str(root), "SELECT 1"])
    assert result.exit_code == 2 and "outside the lake" in result.output
    with Lake.open(catalog_uri) as again:  # the catalog that says where its data is
        assert _count(again, "attempts") == 1


def test_init_refuses_a_data_path_outside_a_directory_lake(tmp_path):
    result = runner.invoke(app, ["lake", "init", "--lake", str(tmp_path / "lake"), "--backend", "cpu",
                                 "--data-path", str(tmp_path / "other")])
    assert result.exit_code == 2 and "a directory lake keeps its files in" in result.output
    assert not (tmp_path / "lake").exists() or not (tmp_path / "lake" / "catalog.sqlite").exists()
    ok = runner.invoke(app, ["lake", "init", "--lake", str(tmp_path / "lake2"), "--backend", "cpu",
                             "--data-path", str(tmp_path / "lake2" / "data")])
    assert ok.exit_code == 0, ok.output


def test_attach_script_reads_a_moved_lake_in_plain_duckdb(tmp_path):
    import duckdb

    from memory_lake.catalog import attach_script

    _lake_with_history(tmp_path / "A").close()
    shutil.move(str(tmp_path / "A"), str(tmp_path / "B"))
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    con.execute(attach_script(str(tmp_path / "B")))
    assert con.execute("SELECT count(*) FROM attempts").fetchall() == [(4,)]

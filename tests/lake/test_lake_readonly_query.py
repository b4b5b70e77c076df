"""`evokernel lake query` is read-only by construction, on both catalog kinds: every writing or
file-reaching statement is refused with one line and nothing changes (rows, snapshots, files);
each of the two layers holds on its own; a lake whose table an older version dropped says so in one
line, and reading it as it was still works."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lake_fixtures import sample_items
from typer.testing import CliRunner

from cli.main import app
from memory_lake import Lake, LakeError, readonly
from memory_lake.storage import DATA_PATH_ENV, parse

runner = CliRunner()

# (statement, what the one line names)
DESTRUCTIVE = [
    ("DELETE FROM attempts", "DELETE statement"),
    ("UPDATE items SET title = 'x'", "UPDATE statement"),
    ("INSERT INTO attempts (attempt_id) VALUES ('evil')", "INSERT statement"),
    ("CREATE TABLE evil (a INTEGER)", "CREATE statement"),
    ("CREATE TEMP TABLE evil AS SELECT 1", "CREATE statement"),
    ("DROP TABLE attempts", "DROP statement"),
    ("ALTER TABLE attempts ADD COLUMN evil INTEGER", "ALTER statement"),
    ("TRUNCATE attempts", "TRUNCATE (a DELETE statement)"),
    ("SELECT 1; DELETE FROM attempts", "2 statements (SELECT; DELETE)"),
    ("COPY (SELECT * FROM attempts) TO '{out}/copied.csv'", "COPY statement"),
    ("ATTACH '{out}/attached.db' AS evil", "ATTACH statement"),
    ("DETACH lake", "DETACH statement"),
    ("CALL ducklake_expire_snapshots('lake', older_than => now())", "CALL statement"),
    ("SELECT * FROM ducklake_expire_snapshots('lake', older_than => now())", "table function ducklake_expire_snapshots"),
    ("SELECT * FROM ducklake_cleanup_old_files('lake', cleanup_all => true)", "table function ducklake_cleanup_old_files"),
    ("SELECT * FROM ducklake_merge_adjacent_files('lake')", "table function ducklake_merge_adjacent_files"),
    ("PRAGMA version", "PRAGMA statement"),
    ("SET threads = 1", "SET statement"),
    ("INSTALL httpfs", "INSTALL (a LOAD statement)"),
    ("EXPORT DATABASE '{out}/exported'", "EXPORT statement"),
    ("IMPORT DATABASE '{out}/exported'", "IMPORT statement"),
    ("SELECT * FROM read_csv('/etc/passwd')", "table function read_csv"),
    ("SELECT * FROM glob('/*')", "table function glob"),
    ("SELECT * FROM query('SELECT 1')", "table function query"),
    ("SELECT force_checkpoint()", "function force_checkpoint"),
    ("EXPLAIN ANALYZE DELETE FROM attempts", "DELETE statement"),
    ("CHECKPOINT", "CHECKPOINT (a CALL statement)"),
]
READS = ["SELECT count(*) FROM attempts", "FROM item_values LIMIT 2", "DESCRIBE items", "SHOW TABLES",
         "SUMMARIZE attempts", "SELECT * FROM lake.snapshots()", "EXPLAIN SELECT * FROM items",
         "WITH a AS (SELECT task_id FROM items) SELECT count(*) FROM a",
         "SELECT * FROM pragma_table_info('attempts')", "SELECT count(*) FROM __ducklake_metadata_lake.ducklake_snapshot"]


def _data_dir(root: str) -> Path:
    location = parse(root)
    return location.directory / "data" if location.directory else Path(os.environ[DATA_PATH_ENV])


def _state(lake: Lake, root: str) -> tuple:
    counts = lake.query("SELECT (SELECT count(*) FROM attempts), (SELECT count(*) FROM items), "
                        "(SELECT count(*) FROM value_updates)").to_pylist()
    files = sorted((str(p), p.stat().st_size) for p in _data_dir(root).rglob("*") if p.is_file())
    return counts, [s.snapshot_id for s in lake.snapshots()], files


def test_destructive_sql_is_refused_and_nothing_changes(catalog_factory, tmp_path):
    root = catalog_factory.new()
    lake = Lake.create(root, "cpu")
    lake.add_items(sample_items(6))
    lake.append("attempts", [{"attempt_id": f"a{i}", "task_id": "L1_1", "code": "x"} for i in range(3)])
    before = _state(lake, root)
    out = tmp_path / "out"
    out.mkdir()
    for statement, named in DESTRUCTIVE:
        result = runner.invoke(app, ["lake", "query", "--lake", root, statement.format(out=out)])
        assert result.exit_code == 2, (statement, result.output)
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: refused: ") and named in lines[0], (statement, lines)
    assert _state(lake, root) == before
    assert list(out.iterdir()) == []  # no file written, no database attached into being
    for statement in READS:
        result = runner.invoke(app, ["lake", "query", "--lake", root, "--format", "json", statement])
        assert result.exit_code == 0, (statement, result.output)
    assert _state(lake, root) == before
    lake.close()


def test_the_connection_alone_refuses_writes_and_files(catalog_factory, tmp_path):
    """Layer 2 without layer 1: statements that reached it would still fail, the lake unchanged."""
    root = catalog_factory.new()
    lake = Lake.create(root, "cpu")
    lake.append("attempts", [{"attempt_id": "a1"}])
    before = _state(lake, root)
    con = readonly.connect(parse(root))
    for statement in ("DELETE FROM attempts", "DROP TABLE attempts", "CREATE TABLE evil (a INTEGER)",
                      "CALL ducklake_expire_snapshots('lake', older_than => now())",
                      f"COPY (SELECT 1) TO '{tmp_path}/x.csv'", f"ATTACH '{tmp_path}/x.db' AS x",
                      "SELECT * FROM read_csv('/etc/passwd')", "SET enable_external_access = true",
                      "SET lock_configuration = false"):
        with pytest.raises(Exception):
            con.execute(statement).fetchall()
    assert con.execute("SELECT count(*) FROM attempts").fetchall() == [(1,)]
    # its extensions were loaded with DuckDB's signature check (the package's own connections skip it)
    assert con.execute("SELECT current_setting('allow_unsigned_extensions')").fetchall() == [(False,)]
    con.close()
    for as_of in (None, 1):
        with readonly.connect(parse(root), as_of) as user:
            assert user.execute("SELECT current_setting('allow_unsigned_extensions')").fetchall() == [(False,)]
    with lake.connect() as own:  # the Python API: its caller runs code anyway
        assert own.execute("SELECT current_setting('allow_unsigned_extensions')").fetchall() == [(True,)]
    assert _state(lake, root) == before and not list(tmp_path.glob("x.*"))
    lake.close()


def test_a_lake_missing_a_table_says_so_in_one_line_and_reads_as_it_was(tmp_path):
    """What an older `lake query "DROP TABLE attempts"` left: one line everywhere, --as-of works."""
    root = str(tmp_path / "lake")
    lake = Lake.create(root, "cpu")
    lake.append("attempts", [{"attempt_id": "a1"}])
    before_drop = lake.snapshots()[-1].snapshot_id
    lake._con.execute("DROP TABLE attempts")  # as a writable `lake query` did
    lake.close()
    with pytest.raises(LakeError, match="table attempts is missing"):
        Lake.open(root)
    for args in (["stats"], ["snapshots"], ["compact"], ["export", "--out", str(tmp_path / "x.parquet")]):
        result = runner.invoke(app, ["lake", *args, "--lake", root])
        assert result.exit_code == 2, (args, result.output)
        assert result.output.strip().splitlines() == [result.output.strip()] and "attempts is missing" in result.output
        assert "Traceback" not in result.output and "AttributeError" not in result.output
    old = runner.invoke(app, ["lake", "query", "--lake", root, "--as-of", str(before_drop), "--format", "csv",
                              "SELECT attempt_id FROM attempts"])
    assert old.exit_code == 0 and old.output.replace('"', "").split() == ["attempt_id", "a1"]
    now = runner.invoke(app, ["lake", "query", "--lake", root, "SELECT count(*) FROM items"])
    assert now.exit_code == 0

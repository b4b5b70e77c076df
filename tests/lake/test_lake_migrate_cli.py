"""`evokernel lake migrate/snapshots/query --as-of/attach` and Lake.migrate on real lakes: an
old-format directory lake (hand-written in its documented layout) into a DuckLake lake of every
kind, and a DuckLake lake into another."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
from lake_fixtures import SEEDS, sample_items
from typer.testing import CliRunner

from cli.main import app
from memory_lake import Lake, ValueUpdate
from memory_lake.rows import to_table

runner = CliRunner()
T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def old_lake(root: Path) -> None:
    """A format-1 lake: lake.json, part/cpt batch files, and a journal left by a cut-short compaction."""
    def write(table: str, name: str, rows: list[dict]) -> None:
        (root / table).mkdir(parents=True, exist_ok=True)
        pq.write_table(to_table(table, rows), root / table / f"{name}.parquet")

    root.mkdir()
    (root / "lake.json").write_text(json.dumps({"format": 1, "backend": "cpu", "q_init": 0.25}))
    write("items", "part-00000000000000000001-b1", [
        {"item_id": "i1", "kind": "experience", "backend": "cpu", "title": "tile matmul", "body": "tile it",
         "source_attempt_id": "a1", "campaign_id": "c1", "created_at": T0}])
    write("items", "cpt-00000000000000000002-b2", [
        {"item_id": "i2", "kind": "trace", "backend": "cpu", "title": "relu trace", "body": "simd relu",
         "parent_item_id": "i1", "created_at": T0}])
    write("attempts", "part-00000000000000000003-b3", [{"attempt_id": "a1", "campaign_id": "c1", "reward": 1.0}])
    write("value_updates", "part-00000000000000000004-b4", [
        {"item_id": "i1", "stage": 1, "attempt_id": "a1", "reward": 1.0, "alpha": 0.5, "q_before": 0.25,
         "q_after": 0.625, "seq": 1},
        {"item_id": "i1", "stage": 1, "attempt_id": "a2", "reward": -1.0, "alpha": 0.5, "q_before": 0.625,
         "q_after": -0.1875, "seq": 2}])
    write("attempts", "cpt-00000000000000000005-b5", [{"attempt_id": "ghost"}])  # an output of the journal below
    (root / "_journal").mkdir()
    (root / "_journal" / "j.json").write_text(json.dumps({
        "outputs": ["attempts/cpt-00000000000000000005-b5.parquet", "attempts/cpt-missing.parquet"],
        "sources": ["attempts/part-00000000000000000003-b3.parquet"]}))


def test_migrate_an_old_directory_lake_keeps_rows_q_and_provenance(tmp_path, lake_factory):
    old_lake(tmp_path / "old")
    new = lake_factory.new()
    result = runner.invoke(app, ["lake", "migrate", str(tmp_path / "old"), new])
    assert result.exit_code == 0, result.output
    assert "2 items" in result.stdout and "1 attempts" in result.stdout and "2 value_updates" in result.stdout
    lake = Lake.open(new)
    assert lake.q_init == 0.25 and lake.backend == "cpu"
    assert lake.current_q(["i1", "i2"], 1) == {"i1": -0.1875, "i2": 0.25}
    row = lake.query("SELECT source_attempt_id, campaign_id, created_at FROM items WHERE item_id = 'i1'").to_pylist()[0]
    assert (row["source_attempt_id"], row["campaign_id"], row["created_at"]) == ("a1", "c1", T0)
    assert lake.query("SELECT attempt_id FROM attempts").column(0).to_pylist() == ["a1"]  # the journal's output hidden
    lake.update_values([ValueUpdate("i1", 1, 1.0, 0.5)])
    assert lake.query("SELECT max(seq) FROM value_updates").column(0)[0].as_py() == 3
    from memory_lake import RetrievalRequest

    hits = lake.retrieve(RetrievalRequest("r", None, "simd relu", None, "cpu", 2, n=1, epsilon=0.0))
    assert hits[0].item_id == "i2"  # postings rebuilt from the migrated items


def test_migrate_a_directory_lake_into_another_lake(tmp_path):
    source = Lake.create(tmp_path / "a", "cpu", SEEDS)
    ids = source.add_items(sample_items(3))
    source.update_values([ValueUpdate(ids[0], 2, 1.0, 0.3, "x")])
    target, result = Lake.migrate(tmp_path / "a", tmp_path / "b")
    assert result.rows["items"] == len(SEEDS) + 3 and result.q_values == 1
    query = "SELECT * EXCLUDE (created_at) FROM value_updates ORDER BY seq"
    assert target.query(query).to_pylist() == source.query(query).to_pylist()
    assert target.query("SELECT * FROM items ORDER BY item_id") == source.query("SELECT * FROM items ORDER BY item_id")


def test_snapshots_as_of_and_attach(tmp_path):
    root = str(tmp_path / "lake")
    lake = Lake.create(root, "cpu", SEEDS)
    before = lake.snapshots()[-1].snapshot_id
    lake.add_items(sample_items(2))
    listed = runner.invoke(app, ["lake", "snapshots", "--lake", root])
    assert listed.exit_code == 0 and str(before) in listed.stdout
    old = runner.invoke(app, ["lake", "query", "--lake", root, "--as-of", str(before), "--format", "csv",
                              "SELECT count(*) AS n FROM items"])
    assert old.exit_code == 0 and old.stdout.splitlines() == ['"n"', str(len(SEEDS))]
    when = lake.snapshots()[-1].time.isoformat()
    now = runner.invoke(app, ["lake", "query", "--lake", root, "--as-of", when, "--format", "csv",
                              "SELECT count(*) AS n FROM items"])
    assert now.stdout.splitlines() == ['"n"', str(len(SEEDS) + 2)]
    bad = runner.invoke(app, ["lake", "query", "--lake", root, "--as-of", "yesterday", "SELECT 1"])
    assert bad.exit_code == 2 and "--as-of yesterday" in bad.stderr
    script = runner.invoke(app, ["lake", "attach", "--lake", root]).stdout
    con = duckdb.connect()
    for statement in script.split(";\n"):
        lines = [line for line in statement.splitlines() if not line.startswith("--")]
        if "".join(lines).strip():
            con.execute("\n".join(lines))
    assert con.execute("SELECT count(*) FROM items").fetchall()[0][0] == len(SEEDS) + 2


def test_a_report_can_be_written_for_the_memory_as_it_was(tmp_path):
    from reports.build import write_report

    root = str(tmp_path / "lake")
    lake = Lake.create(root, "cpu", SEEDS)
    before = lake.snapshots()[-1].snapshot_id
    lake.append("campaigns", [{"campaign_id": "c1", "method": "evokernel", "status": "running"}])
    lake.append("attempts", [{"attempt_id": "a1", "campaign_id": "c1", "task_id": "t", "feasible": True}])
    then = write_report(root, tmp_path / "then", as_of=str(before))
    now = write_report(root, tmp_path / "now")
    assert "campaigns: the lake holds no campaign yet" in then.missing
    assert "campaigns: the lake holds no campaign yet" not in now.missing
    assert f"as of {before}" in (tmp_path / "then" / "index.html").read_text()

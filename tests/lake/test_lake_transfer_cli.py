"""Export/import between lakes and the `evokernel lake` commands, on real lakes."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from lake_fixtures import SEEDS, sample_items
from typer.testing import CliRunner

from cli.main import app
from verifier.backends import get_backend
from memory_lake import Lake, LakeError, NewItem, ValueUpdate


def strong_lake(root) -> tuple[Lake, list[str]]:
    lake = Lake.create(root, "cpu", SEEDS)
    ids = lake.add_items([NewItem("experience", "cpu", "train note", "tile matmul", task_id="train_1",
                                  source_attempt_id="att-1", campaign_id="camp-strong"),
                          NewItem("trace", "cpu", "test trace", "conv kernel", task_id="test_1",
                                  source_attempt_id="att-2", campaign_id="camp-strong")])
    lake.update_values([ValueUpdate(ids[0], 1, 1.0, 0.5, "att-9"), ValueUpdate(ids[0], 2, -1.0, 0.25, "att-9")])
    return lake, ids


def test_export_import_keeps_q_and_provenance_and_filters_test_tasks(tmp_path):
    strong, ids = strong_lake(tmp_path / "strong")
    result = strong.export(tmp_path / "mem.parquet", exclude_tasks=["test_1"])
    assert result.items == len(SEEDS) + 1
    weak = Lake.create(tmp_path / "weak", "cpu")
    imported = weak.import_items(tmp_path / "mem.parquet")
    assert (imported.items, imported.q_values) == (len(SEEDS) + 1, 2)
    row = weak.query("SELECT * FROM items WHERE item_id = ?", [ids[0]]).to_pylist()[0]
    assert (row["source_attempt_id"], row["campaign_id"], row["task_id"]) == ("att-1", "camp-strong", "train_1")
    assert weak.current_q([ids[0]], 1) == {ids[0]: 0.5} and weak.current_q([ids[0]], 2) == {ids[0]: -0.25}
    assert not weak.query("SELECT * FROM items WHERE task_id = 'test_1'").num_rows
    again = weak.import_items(tmp_path / "mem.parquet")
    assert (again.items, again.skipped) == (0, len(SEEDS) + 1)
    hits = weak.retrieve(__import__("memory_lake").RetrievalRequest("a", "x", "tile matmul", None, "cpu", 1, n=1, epsilon=0.0, include_templates=False))
    assert hits[0].item_id == ids[0]


def test_export_by_kind(tmp_path):
    strong, _ = strong_lake(tmp_path / "strong")
    strong.export(tmp_path / "t.parquet", kinds=["trace"])
    assert pq.read_table(tmp_path / "t.parquet").column("kind").to_pylist() == ["trace"]


def test_import_of_a_non_export_is_one_line_error(tmp_path):
    lake = Lake.create(tmp_path / "lake", "cpu")
    pq.write_table(pq.read_table(_parquet_of(tmp_path)), tmp_path / "other.parquet")
    with pytest.raises(LakeError, match="not a lake export"):
        lake.import_items(tmp_path / "other.parquet")
    with pytest.raises(LakeError, match="not found"):
        lake.import_items(tmp_path / "missing.parquet")


def _parquet_of(tmp_path):
    import pyarrow as pa

    pq.write_table(pa.table({"a": [1]}), tmp_path / "a.parquet")
    return tmp_path / "a.parquet"


runner = CliRunner()


def cli(*args: str):
    return runner.invoke(app, ["lake", *args])


def test_cli_init_query_stats_compact(tmp_path):
    root = str(tmp_path / "lake")
    assert cli("init", "--lake", root, "--backend", "cpu").exit_code == 0
    lake = Lake.open(root)
    ids = lake.add_items(sample_items(3))
    lake.update_values([ValueUpdate(ids[0], 1, 1.0, 0.5)])
    shown = cli("query", "--lake", root, "SELECT kind, count(*) AS n FROM items GROUP BY kind ORDER BY kind")
    assert shown.exit_code == 0 and "experience" in shown.stdout and "(3 rows)" in shown.stdout
    as_json = cli("query", "--lake", root, "--format", "json", "SELECT item_id, q FROM item_values WHERE n_updates > 0")
    assert [json.loads(line) for line in as_json.stdout.splitlines()] == [{"item_id": ids[0], "q": 0.5}]
    as_csv = cli("query", "--lake", root, "--format", "csv", "SELECT 1 AS one")
    assert as_csv.stdout.splitlines() == ['"one"', "1"]
    out = tmp_path / "q.parquet"
    assert cli("query", "--lake", root, "--format", "parquet", "--out", str(out), "SELECT 2 AS two").exit_code == 0
    assert pq.read_table(out).column("two").to_pylist() == [2]
    stats = cli("stats", "--lake", root)
    assert stats.exit_code == 0 and "top items by Q1" in stats.stdout and ids[0] in stats.stdout
    compacted = cli("compact", "--lake", root)
    assert compacted.exit_code == 0 and "files" in compacted.stdout


def test_cli_export_import(tmp_path):
    strong, ids = strong_lake(tmp_path / "strong")
    out = str(tmp_path / "mem.parquet")
    exported = cli("export", "--lake", strong.root, "--out", out, "--exclude-tasks", "test_1,other", "--kinds",
                   "experience")
    assert exported.exit_code == 0 and "exported 1 items" in exported.stdout
    weak = str(tmp_path / "weak")
    cli("init", "--lake", weak, "--backend", "cpu")
    assert cli("import", out, "--lake", weak).exit_code == 0
    assert Lake.open(weak).current_q([ids[0]], 1) == {ids[0]: 0.5}


@pytest.mark.parametrize("args, message", [
    (("query", "--lake", "{root}", "SELEC 1"), "query failed"),
    (("query", "--lake", "{missing}", "SELECT 1"), "no memory lake here"),
    (("stats", "--lake", "{missing}"), "no memory lake here"),
    (("init", "--lake", "{root}", "--backend", "cpu"), "already exists"),
    (("init", "--lake", "{missing}", "--backend", "nosuch"), "unknown backend"),
])
def test_cli_errors_are_one_line_exit_2(tmp_path, args, message):
    root = str(tmp_path / "lake")
    Lake.create(root, "cpu")
    result = runner.invoke(app, ["lake", *(a.format(root=root, missing=str(tmp_path / "nope")) for a in args)])
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_import_into_a_fresh_lake_adds_no_second_copy_of_the_seeds(tmp_path):
    """A lake seeded with the backend's api_templates (as lakes were before seeds the scaffold shows
    were left out) holds them under ids of its own: an export of one such lake imported into another
    adds its other items, not those seeds again."""
    strong, fresh, out = str(tmp_path / "strong"), str(tmp_path / "fresh"), tmp_path / "mem.parquet"
    for root in (strong, fresh):
        Lake.create(root, "cpu", seed_items=get_backend("cpu").seed_items()).close()
    with Lake.open(strong) as lake:
        seeds = lake.query("SELECT item_id, title FROM items WHERE kind = 'api_template' ORDER BY item_id").to_pylist()
        assert seeds, "the cpu backend seeds its lakes"
        lake.add_items([NewItem("experience", "cpu", "learned", "tile the loop", task_id="L1_1")])
        lake.update_values([ValueUpdate(seeds[0]["item_id"], 1, 1.0, 0.5, "att-1")])  # a seed it learned about
    assert cli("export", "--lake", strong, "--out", str(out)).exit_code == 0
    result = cli("import", str(out), "--lake", fresh)
    assert result.exit_code == 0, result.output
    assert f"imported 1 items ({len(seeds)} already present" in result.output
    with Lake.open(fresh) as lake:
        mine = lake.query("SELECT item_id, title FROM items WHERE kind = 'api_template' ORDER BY item_id").to_pylist()
        assert [r["title"] for r in mine] == [r["title"] for r in seeds]  # one copy of each seed
        assert lake.query("SELECT count(*) AS n FROM items WHERE kind = 'experience'").column("n")[0].as_py() == 1
        same = next(r["item_id"] for r in mine if r["title"] == seeds[0]["title"])
        assert lake.current_q([same], 1) == {same: 0.5}  # the seed's learned Q, on this lake's copy
    again = cli("import", str(out), "--lake", fresh)
    assert f"imported 0 items ({len(seeds) + 1} already present, 0 Q values)" in again.output

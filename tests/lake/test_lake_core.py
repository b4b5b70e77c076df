"""Lake basics on real DuckLake catalogs (every kind): create/open, append validation, items, values."""

from __future__ import annotations

import pytest

from memory_lake import Lake, LakeError, NewItem, ValueUpdate
from lake_fixtures import SEEDS, sample_items


def test_create_loads_seed_templates_in_order(lake):
    rows = lake.query("SELECT kind, backend, title FROM items ORDER BY item_id").to_pylist()
    assert [r["title"] for r in rows] == [s.title for s in SEEDS]
    assert {r["kind"] for r in rows} == {"api_template"} and {r["backend"] for r in rows} == {"cpu"}


def test_create_over_existing_lake_is_an_error_naming_the_path(lake):
    with pytest.raises(LakeError, match=str(lake.root)):
        Lake.create(lake.root, "cpu")


def test_open_missing_lake_is_one_line_error(tmp_path):
    with pytest.raises(LakeError) as info:
        Lake.open(tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in str(info.value) and "\n" not in str(info.value)


def test_open_sees_what_create_wrote(lake):
    reopened = Lake.open(lake.root)
    assert reopened.backend == "cpu" and reopened.q_init == 0.0
    assert reopened.query("SELECT count(*) AS n FROM items").column("n")[0].as_py() == len(SEEDS)


def test_append_fills_missing_nullable_columns_with_null(lake):
    lake.append("attempts", [{"attempt_id": "a1", "level": 1, "speedup": 2}])
    row = lake.query("SELECT * FROM attempts").to_pylist()[0]
    assert row["attempt_id"] == "a1" and row["speedup"] == 2.0 and row["model"] is None
    assert row["created_at"] is not None


@pytest.mark.parametrize("rows, column", [
    ([{"attempt_id": "a", "bogus": 1}], "bogus"),
    ([{"attempt_id": 7}], "attempt_id"),
    ([{"attempt_id": "a", "level": "one"}], "level"),
    ([{"level": 1}], "attempt_id"),
])
def test_bad_rows_name_table_and_column(lake, rows, column):
    with pytest.raises(LakeError, match=f"attempts: .*{column}"):
        lake.append("attempts", rows)


def test_each_batch_is_one_snapshot(lake):
    before = len(lake.snapshots())
    for i in range(3):
        lake.append("attempts", [{"attempt_id": f"a{i}"}, {"attempt_id": f"b{i}"}])
    assert len(lake.snapshots()) == before + 3
    assert lake.query("SELECT count(*) AS n FROM attempts").column("n")[0].as_py() == 6
    first = lake.snapshots()[before].snapshot_id
    assert lake.query("SELECT count(*) AS n FROM attempts", as_of=first).column("n")[0].as_py() == 2


def test_add_items_returns_ids_and_indexes_them(lake):
    ids = lake.add_items(sample_items(5))
    assert len(set(ids)) == 5
    got = lake.query("SELECT item_id FROM items WHERE kind <> 'api_template' ORDER BY item_id").column(0).to_pylist()
    assert got == ids
    assert lake.query("SELECT count(DISTINCT item_id) AS n FROM postings").column("n")[0].as_py() == 5 + len(SEEDS)


def test_new_item_rejects_unknown_kind():
    with pytest.raises(LakeError, match="kind"):
        NewItem(kind="memo", backend="cpu", title="t", body="b")


def test_update_values_applies_the_rule_in_order_and_records_rows(lake):
    (item,) = lake.add_items(sample_items(1))
    result = lake.update_values([ValueUpdate(item, 1, 1.0, 0.5, "a1", "c1"), ValueUpdate(item, 1, -1.0, 0.5, "a2", "c1")])
    assert result == {item: pytest.approx(-0.25)}  # 0 -> 0.5 -> 0.5 + 0.5 * (-1 - 0.5)
    rows = lake.query("SELECT q_before, q_after, reward, seq, attempt_id FROM value_updates ORDER BY seq").to_pylist()
    assert [(r["q_before"], r["q_after"], r["seq"]) for r in rows] == [(0.0, 0.5, 1), (0.5, -0.25, 2)]
    assert lake.current_q([item], 1) == {item: pytest.approx(-0.25)}
    assert lake.current_q([item], 2) == {item: 0.0}


def test_item_values_view_has_q_init_for_items_without_updates(lake_factory):
    lake = Lake.create(lake_factory.new(), "cpu", SEEDS, q_init=0.25)
    (item,) = lake.add_items(sample_items(1))
    lake.update_values([ValueUpdate(item, 2, 1.0, 1.0)])
    rows = {(r["item_id"], r["stage"]): (r["q"], r["n_updates"])
            for r in lake.query("SELECT * FROM item_values").to_pylist()}
    assert rows[(item, 1)] == (0.25, 0) and rows[(item, 2)] == (1.0, 1)
    assert len(rows) == 2 * (len(SEEDS) + 1)


def test_update_of_unknown_item_is_an_error(lake):
    with pytest.raises(LakeError, match="nope"):
        lake.update_values([ValueUpdate("nope", 1, 1.0, 0.3)])


def test_malformed_query_is_one_line_error(lake):
    with pytest.raises(LakeError, match="query failed") as info:
        lake.query("SELEC 1")
    assert "\n" not in str(info.value)


def test_query_binds_parameters(lake):
    got = lake.query("SELECT title FROM items WHERE category = ?", ["activation"]).column(0).to_pylist()
    assert got == ["cpu worked example: relu"]


def test_connect_gives_views_of_every_table(lake):
    con = lake.connect()
    for view in ("items", "attempts", "retrievals", "value_updates", "campaigns", "item_values"):
        con.execute(f"SELECT count(*) FROM {view}").fetchall()


def test_open_or_create_creates_once_and_then_opens(lake_factory):
    uri = lake_factory.new()
    assert not Lake.exists(uri)
    created = Lake.open_or_create(uri, "cpu", SEEDS)
    ids = created.add_items(sample_items(2))
    again = Lake.open_or_create(uri, "cpu", SEEDS)
    assert again.query("SELECT count(*) AS n FROM items").column("n")[0].as_py() == len(SEEDS) + len(ids)


def test_open_existing_opens_a_lake_says_none_where_there_is_none_and_raises_for_a_damaged_one(tmp_path):
    assert Lake.open_existing(tmp_path / "nothing") is None and not (tmp_path / "nothing").exists()
    root = tmp_path / "lake"
    with Lake.create(root, "cpu", SEEDS) as created:
        created.add_items(sample_items(1))
    with Lake.open_existing(root) as opened:
        assert opened.query("SELECT count(*) AS n FROM items").column("n")[0].as_py() == len(SEEDS) + 1
    with Lake.open(root) as damaged:
        damaged._con.execute("DROP TABLE attempts")  # as an older writable `lake query` could
    with pytest.raises(LakeError, match="table attempts is missing"):
        Lake.open_existing(root)  # a lake is there: its error, not None (which would create another)
    with pytest.raises(LakeError, match="table attempts is missing"):
        Lake.open_or_create(root, "cpu", SEEDS)


def test_values_history_rows_must_follow_the_clock(lake):
    (item,) = lake.add_items(sample_items(1))
    lake.update_values([ValueUpdate(item, 1, 1.0, 0.5)])
    with pytest.raises(LakeError, match="above the lake's last seq 1"):
        lake.append("value_updates", [{"item_id": item, "stage": 1, "q_after": 0.1, "seq": 1}])
    lake.append("value_updates", [{"item_id": item, "stage": 1, "q_after": 0.1, "seq": 7}])
    lake.update_values([ValueUpdate(item, 1, 1.0, 0.5)])
    assert lake.query("SELECT max(seq) FROM value_updates").column(0)[0].as_py() == 8


@pytest.mark.parametrize("uri, message", [
    ("", "empty lake URI"),
    ("ducklake:postgres:", "missing the libpq conninfo"),
    ("ducklake:mysql:db", "unsupported catalog"),
    ("s3://bucket/lake", "--data-path s3://"),
])
def test_bad_lake_uris_are_one_line_errors(uri, message):
    from memory_lake.storage import parse

    with pytest.raises(LakeError, match=message):
        parse(uri)


def test_uri_kinds_and_password_redaction(tmp_path):
    from memory_lake.storage import parse

    directory = parse(str(tmp_path / "lake"))
    assert directory.kind == "directory" and directory.catalog.endswith("lake/catalog.sqlite")
    assert directory.default_data_path() == str(tmp_path / "lake" / "data") + "/"
    pg = parse("ducklake:postgres:dbname=lake host=db password=hunter2")
    assert pg.kind == "postgres" and pg.catalog == pg.uri and "hunter2" not in pg.label


def test_catalog_lake_without_data_path_is_refused(monkeypatch):
    monkeypatch.delenv("EVOKERNEL_LAKE_DATA_PATH", raising=False)
    with pytest.raises(LakeError, match="needs a data path"):
        Lake.create("ducklake:postgres:dbname=nowhere host=127.0.0.1 port=1", "cpu")

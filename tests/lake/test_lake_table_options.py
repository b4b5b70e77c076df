"""Table options (row-group sizes, codecs, inlining) are part of the lake's catalog: a lake created
before an option existed gains it when opened, files written from then on use it, files written
before stay readable, and opening an up-to-date lake changes nothing."""

from __future__ import annotations

import pyarrow.parquet as pq

from memory_lake import Lake, NewItem, RetrievalRequest
from memory_lake.catalog import apply_table_options, stored_table_options, table_options
from memory_lake.keyed_reads import open_data_file


def _codecs(lake: Lake, table: str) -> list[str]:
    out = []
    for path in lake.files().paths(table):
        with open_data_file(path) as handle:
            out.append(pq.read_metadata(handle).row_group(0).column(0).compression)
    return out


def _items(n: int, word: str) -> list[NewItem]:
    return [NewItem(kind="experience", backend="cpu", title=f"{word} note {i}", body=f"{word} vectorize loop {i}",
                    category="activation") for i in range(n)]


def test_an_older_lake_gains_the_codec_on_open_and_keeps_its_old_files_readable(catalog_factory):
    uri = catalog_factory.new()
    lake = Lake.create(uri, "cpu")
    with lake._guard:  # as a lake written by a version that wrote items with DuckDB's default codec
        lake._con.execute("CALL ducklake_set_option('lake', 'parquet_compression', 'snappy', table_name => 'items')")
    old_ids = lake.add_items(_items(3, "relu"))
    assert _codecs(lake, "items") == ["SNAPPY"]
    lake.close()

    lake = Lake.open(uri)
    try:
        new_ids = lake.add_items(_items(3, "softmax"))
        assert sorted(_codecs(lake, "items")) == ["LZ4", "SNAPPY"]  # pyarrow names LZ4_RAW "LZ4"
        shown = lake.retrieve(RetrievalRequest(attempt_id="a", task_id="t", task_text="relu softmax vectorize loop",
                                               category="activation", backend="cpu", stage=1, n=6, lam=2,
                                               include_templates=False), record=False)
        assert {r.item_id for r in shown} == set(old_ids + new_ids)
        assert {r.title for r in shown if r.item_id in old_ids} == {"relu note 0", "relu note 1", "relu note 2"}
        with lake._guard:
            assert apply_table_options(lake._con) == ()  # up to date: nothing set again
            stored = stored_table_options(lake._con)
        assert all(stored[key] == value for key, value in table_options().items())
    finally:
        lake.close()

"""File maintenance through DuckLake's own functions, safe while campaigns write, plus the one
derived structure DuckLake has no notion of: the champion lists of the BM25 postings.

``compact`` runs, each step its own transaction(s):
1. ``ducklake_flush_inlined_data``: rows a lake made before inlining was turned off still holds in
   its catalog become Parquet files (new lakes inline nothing: see catalog.table_options);
2. ``ducklake_merge_adjacent_files``: small files become large ones, sorted by each table's
   SORTED BY keys (postings by term, items by id: row groups then prune well). Older snapshots
   still see the rows they saw: time travel is unchanged;
3. champion lists rebuilt over the postings files of one snapshot (sql/champions.sql: per term
   and kind the ``champions_k`` postings of highest BM25 term weight), replacing the previous
   lists and their ``champion_sources`` in one transaction;
4. with ``expire_older_than`` (seconds), ``ducklake_expire_snapshots`` of older snapshots (time
   travel before then ends there), then ``ducklake_cleanup_old_files`` and
   ``ducklake_delete_orphaned_files`` (files of expired snapshots, and files of writers that died
   before committing) older than ORPHAN_GRACE_S, so no in-flight writer loses a file: the grace
   period. Files that snapshots expired by this run used are therefore deleted by a compaction
   at least ORPHAN_GRACE_S later (the result counts both). A directory lake deletes only under its
   own data folder, wherever it was copied or moved (datapath.py).
Concurrent appends go on throughout (inserts never conflict with merges); two compactions at once
conflict on the champion tables and the later one retries.
"""

from __future__ import annotations

import duckdb

from memory_lake import engine
from memory_lake.engine import ALIAS
from memory_lake.models import CompactionResult, Expiry, TableStats
from memory_lake.schema import ALL_TABLES
from memory_lake.sqlfiles import sql

CHAMPIONS_K = 1_000  # champion postings kept per (term, kind)
BM25_K1, BM25_B = 1.2, 0.75  # the weight champions are ranked by (Bm25Scorer's defaults)
ORPHAN_GRACE_S = 3600  # untracked files younger than this may belong to a writer still committing


def compact(con: duckdb.DuckDBPyConnection, expire_older_than: float | None = None,
            champions_k: int | None = None) -> CompactionResult:
    before = file_footprint(con)
    _call(con, f"CALL ducklake_flush_inlined_data('{ALIAS}')")
    merged = _call(con, f"CALL ducklake_merge_adjacent_files('{ALIAS}')")
    rebuild_champions(con, CHAMPIONS_K if champions_k is None else champions_k)
    expired = _expire(con, float(expire_older_than)) if expire_older_than is not None else None
    after = file_footprint(con)
    tables = tuple(sorted({row[1] for row in merged if row[2]}))
    return CompactionResult(tables=tables, files_before=sum(n for n, _ in before.values()),
                            files_after=sum(n for n, _ in after.values()),
                            bytes_before=sum(b for _, b in before.values()), bytes_after=sum(b for _, b in after.values()),
                            expired=expired)


def rebuild_champions(con: duckdb.DuckDBPyConnection, k: int) -> None:
    """Replace the champion lists with ones built from the current postings files (one transaction)."""

    def body(c: duckdb.DuckDBPyConnection) -> None:
        sources = [row[0] for row in c.execute(f"SELECT data_file FROM ducklake_list_files('{ALIAS}', 'postings')")
                   .fetchall()]
        c.execute("DELETE FROM champions")
        c.execute("DELETE FROM champion_sources")
        if not sources:
            return
        c.execute("INSERT INTO champions " + sql("champions"), {"k": int(k), "k1": BM25_K1, "b": BM25_B})
        c.execute("INSERT INTO champion_sources SELECT unnest($files::VARCHAR[])", {"files": sources})

    # One thread: DuckLake sorts each writer thread's rows by the table's SORTED BY key on its own,
    # so with two threads the file held two interleaved sorted runs and each term's postings
    # were spread over twice the row groups (and the readers' bisection over them was lost).
    threads = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    con.execute("SET threads = 1")
    try:
        engine.transaction(con, body)
    finally:
        con.execute(f"SET threads = {int(threads)}")


def _expire(con: duckdb.DuckDBPyConnection, older_than_s: float) -> Expiry:
    cutoff = f"now() - INTERVAL '{float(older_than_s)} seconds'"
    grace = f"now() - INTERVAL '{ORPHAN_GRACE_S} seconds'"
    snapshots = _call(con, f"CALL ducklake_expire_snapshots('{ALIAS}', older_than => {cutoff})")
    old_files = _call(con, f"CALL ducklake_cleanup_old_files('{ALIAS}', older_than => {grace})")
    orphans = _call(con, f"CALL ducklake_delete_orphaned_files('{ALIAS}', older_than => {grace})")
    ids = sorted(int(row[0]) for row in snapshots)
    first = engine.retrying(lambda: con.execute(f"SELECT min(snapshot_id), min(snapshot_time) FROM "
                                                f"ducklake_snapshots('{ALIAS}')").fetchall()[0], con=con)
    return Expiry(snapshots=len(ids), first_expired=ids[0] if ids else None, last_expired=ids[-1] if ids else None,
                  files_deleted=len(old_files), orphans_deleted=len(orphans), oldest_kept=first[0],
                  oldest_kept_time=first[1], grace_s=ORPHAN_GRACE_S)


def _call(con: duckdb.DuckDBPyConnection, statement: str) -> list:
    """One DuckLake maintenance call in autocommit, retried (after a rollback) when it loses a commit race."""
    return engine.retrying(lambda: con.execute(statement).fetchall(), con=con)


def file_footprint(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, int]]:
    """(data files, bytes) per table at the latest snapshot (rows held inline in the catalog: no file)."""
    out = {}
    for table in ALL_TABLES:
        n, size = engine.retrying(lambda: con.execute(
            f"SELECT count(*), coalesce(sum(data_file_size_bytes), 0) FROM ducklake_list_files('{ALIAS}', '{table}')"
        ).fetchall()[0], con=con)
        out[table] = (int(n), int(size))
    return out


def table_stats(con: duckdb.DuckDBPyConnection) -> tuple[TableStats, ...]:
    footprint = file_footprint(con)
    counts = " UNION ALL ".join(f"SELECT '{t}', count(*) FROM {t}" for t in ALL_TABLES)  # t: a known table
    rows = dict(engine.retrying(lambda: con.execute(counts).fetchall(), con=con))
    return tuple(TableStats(t, int(rows[t]), *footprint[t]) for t in ALL_TABLES)

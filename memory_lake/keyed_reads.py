"""Keyed reads of immutable Parquet files: the rows whose key column is in a small set, reading
only the row groups whose footer min/max statistics can hold one of the keys.

This is the lake's point-lookup path (posting lists by term, item rows by item_id). DuckDB's own
pruning of a join or IN-list filter uses one min..max range over all keys, which for a dozen
terms spread over the alphabet covers nearly every row group of a term-sorted file. Files never
change after commit, so each file's footer (metadata and the key's row-group statistics) is read
once and cached. Low-cardinality string columns may be read dictionary-encoded (cheap to decode).
Correctness never depends on sort order: a row group without statistics is always read; sorting
(postings by term, items by id) only makes the pruning effective.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import IO, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from memory_lake.engine import s3_settings

# (min, max) of the key column per row group; None where a row group has no usable statistics.
Ranges = list[tuple[str, str] | None]


@dataclass(frozen=True)
class GroupIndex:
    """A file's row-group key ranges; ``maxs`` when every group has statistics and both bounds
    ascend (a file sorted by the key), so a key's groups are found by bisection, not a scan of
    every group (a 14M-row champions file has 3,400 row groups)."""

    ranges: Ranges
    maxs: list[str] | None

    @classmethod
    def of(cls, ranges: Ranges) -> "GroupIndex":
        known = [r for r in ranges if r is not None]
        ascending = len(known) == len(ranges) and all(
            a[0] <= b[0] and a[1] <= b[1] for a, b in zip(known, known[1:]))
        return cls(ranges, [high for _, high in known] if ascending else None)

    def matching(self, sorted_keys: list[str]) -> list[int]:
        """Row groups whose [min, max] contains at least one key (unknown ranges always match)."""
        if self.maxs is None:
            return matching_groups(self.ranges, sorted_keys)
        found: set[int] = set()
        for key in sorted_keys:
            group = bisect.bisect_left(self.maxs, key)  # the first group whose max >= key
            while group < len(self.ranges) and self.ranges[group][0] <= key:  # mins ascend too
                found.add(group)
                group += 1
        return sorted(found)


Footer = tuple[pq.FileMetaData, GroupIndex]


class KeyedReader:
    """Cached footers of a lake's files plus the pruned read; one per Lake (thread-safe).
    ``opener`` opens a file path for binary reading (default: the local file system)."""

    def __init__(self, opener: Callable[[str], IO[bytes]] | None = None, max_files: int = 4096,
                 cache_bytes: int = 0) -> None:
        self.opener = opener or open_data_file
        self.max_files = max_files
        self.cache_bytes = cache_bytes  # rows kept per key value for ``cached`` reads (LRU, by Arrow size)
        self._footers: OrderedDict[tuple[str, str], Footer] = OrderedDict()
        self._rows: OrderedDict[tuple, pa.Table] = OrderedDict()  # (path, key, columns, dictionary, value)
        self._held = 0
        self._lock = threading.Lock()

    def read(self, path: str, key: str, keys: Sequence[str], columns: Sequence[str],
             dictionary: Sequence[str] = (), cached: bool = False) -> pa.Table:
        """Rows of ``path`` whose ``key`` is in ``keys`` (only ``columns``, key included);
        the ``dictionary`` columns come back dictionary-encoded. ``cached``: each key's rows are
        kept (up to ``cache_bytes``, least recently used out first) and reused: for hot keys such
        as frequent posting terms. Files never change after commit, so cached rows never go stale."""
        wanted = sorted(set(keys))
        if not (cached and self.cache_bytes > 0):
            return self._read(path, key, wanted, columns, dictionary)
        read_key = (path, key, tuple(columns), tuple(dictionary))
        parts: dict[str, pa.Table] = {}
        with self._lock:
            for value in wanted:
                rows = self._rows.get((*read_key, value))
                if rows is not None:
                    self._rows.move_to_end((*read_key, value))
                    parts[value] = rows
        missing = [v for v in wanted if v not in parts]
        if missing:
            fresh = self._read(path, key, missing, columns, dictionary)
            split = _split_by_key(fresh, key, missing)
            parts.update(split)
            with self._lock:
                for value, rows in split.items():
                    self._rows[(*read_key, value)] = rows
                    self._held += rows.nbytes
                while self._held > self.cache_bytes and self._rows:
                    self._held -= self._rows.popitem(last=False)[1].nbytes
        return pa.concat_tables([parts[v] for v in wanted])

    def _read(self, path: str, key: str, wanted: list[str], columns: Sequence[str],
              dictionary: Sequence[str]) -> pa.Table:
        with self.opener(path) as handle:
            metadata, index = self._footer(path, key, handle)
            groups = index.matching(wanted)
            if not groups:
                return _empty(metadata.schema.to_arrow_schema(), columns, dictionary)
            parquet = pq.ParquetFile(handle, metadata=metadata, read_dictionary=list(dictionary) or None)
            table = parquet.read_row_groups(groups, columns=list(columns))
        mask = pc.is_in(table.column(key), value_set=pa.array(wanted, pa.string()))
        return table.filter(mask)

    def _footer(self, path: str, key: str, handle) -> Footer:
        cache_key = (path, key)
        with self._lock:
            if cache_key in self._footers:
                self._footers.move_to_end(cache_key)
                return self._footers[cache_key]
        metadata = pq.read_metadata(handle)
        footer = (metadata, GroupIndex.of(footer_ranges(metadata, key)))
        with self._lock:
            self._footers[cache_key] = footer
            while len(self._footers) > self.max_files:
                self._footers.popitem(last=False)
        return footer


def open_data_file(path: str) -> IO[bytes]:
    """Open a lake data file for reading: a local path, or an s3:// URL (AWS environment)."""
    if path.startswith("s3://"):
        return _s3(tuple(sorted(s3_settings().items()))).open_input_file(path[len("s3://"):])
    return open(path, "rb")


@lru_cache(maxsize=4)
def _s3(frozen: tuple[tuple[str, str], ...]) -> pafs.S3FileSystem:
    settings = dict(frozen)
    options = {"access_key": settings.get("KEY_ID"), "secret_key": settings.get("SECRET"),
               "session_token": settings.get("SESSION_TOKEN"), "region": settings.get("REGION")}
    if "ENDPOINT" in settings:
        options.update(endpoint_override=settings["ENDPOINT"],
                       scheme="https" if settings.get("USE_SSL") == "true" else "http")
    return pafs.S3FileSystem(**{k: v for k, v in options.items() if v})


def footer_ranges(metadata: pq.FileMetaData, key: str) -> Ranges:
    """Per row group, the (min, max) of column ``key`` from the footer, or None if unknown."""
    index = metadata.schema.to_arrow_schema().get_field_index(key)
    ranges: Ranges = []
    for g in range(metadata.num_row_groups):
        stats = metadata.row_group(g).column(index).statistics
        if stats is None or not stats.has_min_max or not isinstance(stats.min, str):
            ranges.append(None)
        else:
            ranges.append((stats.min, stats.max))
    return ranges


def matching_groups(ranges: Ranges, sorted_keys: list[str]) -> list[int]:
    """Row groups whose [min, max] contains at least one key (unknown ranges always match)."""
    out = []
    for g, bounds in enumerate(ranges):
        if bounds is None:
            out.append(g)
            continue
        low, high = bounds
        i = bisect.bisect_left(sorted_keys, low)
        if i < len(sorted_keys) and sorted_keys[i] <= high:
            out.append(g)
    return out


def _empty(schema: pa.Schema, columns: Sequence[str], dictionary: Sequence[str] = ()) -> pa.Table:
    fields = [schema.field(c) for c in columns]
    fields = [f.with_type(pa.dictionary(pa.int32(), f.type)) if f.name in dictionary else f for f in fields]
    return pa.schema(fields).empty_table()


def _split_by_key(table: pa.Table, key: str, values: list[str]) -> dict[str, pa.Table]:
    """The rows of each key value (every value gets a table, empty when it has no rows), each in one
    chunk (dictionary columns unified)."""
    column = table.column(key)
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return {v: table.filter(pc.equal(column, v)).combine_chunks() for v in values}  # one chunk: cheap to scan

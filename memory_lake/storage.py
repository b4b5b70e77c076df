"""Where the lake's bytes live: one root (a local path or any fsspec URL), one directory per
table, one Parquet file per write batch, and the file-visibility rules readers apply.

Layout::

    <root>/lake.json                      format version, backend, q_init (written last by create)
    <root>/<table>/part-<ns>-<batch>.parquet   one committed write batch
    <root>/<table>/cpt-<ns>-<batch>.parquet    a compaction output
    <root>/_tmp/<uuid>.parquet            files being written (never read; renamed when complete)
    <root>/_journal/<uuid>.json           an in-flight compaction: its sources and outputs
    <root>/_lake.lock, <root>/_values.lock   advisory lock files (local roots)

Concurrency, appends: *unique names, no lock*. Every batch gets a fresh name (time, uuid) and is
written under ``_tmp`` and renamed into its table directory, so two processes appending at once
never touch the same file and a reader (which lists ``part-*``/``cpt-*`` only) never sees a partial
file. A lock would serialise writers for no gain; a rename is atomic on a local file system and a
PUT is atomic on an object store.

Derived tables (docs, postings) are written *before* their items file, with the same batch id;
a derived ``part-`` file is visible only when the items file of its batch is (the items file is
the batch's commit point), so a writer killed between the two leaves no half-indexed batch.

Compaction replaces files under the exclusive lake lock with a journal (see compaction.py);
readers list files under the shared lock and resolve any journal left by a crash: if all its
outputs exist the sources are hidden, otherwise the outputs are. Q updates take their own
exclusive lock (values.py). On non-local roots the locks are process-local (an object store has
no advisory locks): appends stay safe there, compaction and Q updates must then run from one
process at a time.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from memory_lake.errors import LakeError
from memory_lake.schema import ALL_TABLES

DERIVED_TABLES = ("docs", "postings", "champions")
META_FILE = "lake.json"
# Rows per Parquet row group: small enough that id and term filters prune most of a big file.
ROW_GROUP_ROWS = {"postings": 16_384, "champions": 4_096, "items": 2_048}  # items: point reads of wide rows
DEFAULT_ROW_GROUP_ROWS = 8_192


def row_group_rows(table: str) -> int:
    return ROW_GROUP_ROWS.get(table, DEFAULT_ROW_GROUP_ROWS)
_PROCESS_LOCKS: dict[tuple[str, str], threading.RLock] = {}


@dataclass(frozen=True)
class DataFile:
    path: str  # full path inside the file system
    table: str
    prefix: str  # part | cpt
    batch_id: str
    size: int


def new_batch_id() -> str:
    return uuid.uuid4().hex


def parse_name(table: str, path: str, size: int) -> DataFile | None:
    name = path.rsplit("/", 1)[-1]
    if not name.endswith(".parquet"):
        return None
    parts = name[: -len(".parquet")].split("-")
    if len(parts) != 3 or parts[0] not in ("part", "cpt"):
        return None
    return DataFile(path=path, table=table, prefix=parts[0], batch_id=parts[2], size=size)


class Storage:
    """File-level access to one lake root through fsspec."""

    def __init__(self, root: str | Path) -> None:
        self.url = str(root)
        self.fs, self.root = fsspec.core.url_to_fs(self.url)
        self.root = self.root.rstrip("/") or "/"
        self.local = isinstance(self.fs, LocalFileSystem)

    # ---- paths -------------------------------------------------------------------------
    def path(self, *parts: str) -> str:
        return "/".join((self.root, *parts))

    def duck_path(self, path: str) -> str:
        """The name DuckDB reads a file by (local path, or protocol URL via a registered fs)."""
        if self.local:
            return path
        protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        return f"{protocol}://{path}"

    # ---- lake metadata -----------------------------------------------------------------
    def exists(self) -> bool:
        return self.fs.exists(self.path(META_FILE))

    def read_meta(self) -> dict:
        try:
            with self.fs.open(self.path(META_FILE), "r") as handle:
                return json.load(handle)
        except FileNotFoundError:
            raise LakeError(f"{self.url}: no memory lake here (missing {META_FILE})") from None
        except json.JSONDecodeError as exc:
            raise LakeError(f"{self.url}/{META_FILE}: invalid JSON ({exc})") from None

    def init_layout(self) -> None:
        if self.fs.exists(self.root) and (self.fs.ls(self.root) if self.fs.isdir(self.root) else True):
            raise LakeError(f"{self.url}: already exists and is not empty (a lake is created only once)")
        for name in (*ALL_TABLES, "_tmp", "_journal"):
            self.fs.makedirs(self.path(name), exist_ok=True)

    def write_meta(self, meta: dict) -> None:
        self.write_bytes_atomically(self.path(META_FILE), json.dumps(meta, indent=2).encode())

    # ---- writing -----------------------------------------------------------------------
    def temp_path(self, suffix: str = ".parquet") -> str:
        return self.path("_tmp", f"{uuid.uuid4().hex}{suffix}")

    def final_path(self, table: str, batch_id: str, prefix: str = "part") -> str:
        return self.path(table, f"{prefix}-{time.time_ns():020d}-{batch_id}.parquet")

    def write_parquet_temp(self, data: pa.Table, row_group_size: int = DEFAULT_ROW_GROUP_ROWS) -> str:
        tmp = self.temp_path()
        with self.fs.open(tmp, "wb") as handle:
            pq.write_table(data, handle, compression="zstd", row_group_size=row_group_size)
        return tmp

    def commit(self, tmp: str, final: str) -> None:
        self.fs.mv(tmp, final)

    def write_batch_file(self, table: str, data: pa.Table, batch_id: str, prefix: str = "part") -> str:
        """Write one batch file: temp name, then rename into the table directory."""
        tmp = self.write_parquet_temp(data, row_group_rows(table))
        final = self.final_path(table, batch_id, prefix)
        self.commit(tmp, final)
        return final

    def write_bytes_atomically(self, path: str, payload: bytes) -> None:
        tmp = self.temp_path(".json")
        with self.fs.open(tmp, "wb") as handle:
            handle.write(payload)
        self.fs.mv(tmp, path)

    # ---- listing -----------------------------------------------------------------------
    def list_table(self, table: str) -> list[DataFile]:
        directory = self.path(table)
        if self.local:
            try:
                entries = [(e.path, e.stat().st_size) for e in os.scandir(directory) if e.is_file()]
            except FileNotFoundError:
                return []
        else:
            try:
                listed = self.fs.ls(directory, detail=True)
            except FileNotFoundError:  # a table added after the lake was created (champions)
                return []
            entries = [(e["name"], e.get("size") or 0) for e in listed if e.get("type") == "file"]
        files = (parse_name(table, path, size) for path, size in entries)
        return sorted((f for f in files if f is not None), key=lambda f: f.path)

    def journals(self) -> list[tuple[str, dict]]:
        found = []
        for path in sorted(self.fs.glob(self.path("_journal", "*.json"))):
            with self.fs.open(path, "r") as handle:
                found.append((path, json.load(handle)))
        return found

    def visible_files(self) -> dict[str, list[DataFile]]:
        """Committed files per table, with journals and the batch rule applied (shared lock)."""
        with self.lock("lake", exclusive=False):
            listing = {table: self.list_table(table) for table in ALL_TABLES}
            hidden = self.hidden_by_journals(listing)
        listing = {t: [f for f in files if f.path not in hidden] for t, files in listing.items()}
        committed = {f.batch_id for f in listing["items"]}
        for table in DERIVED_TABLES:
            listing[table] = [f for f in listing[table] if f.prefix == "cpt" or f.batch_id in committed]
        return listing

    def hidden_by_journals(self, listing: dict[str, list[DataFile]]) -> set[str]:
        present = {f.path for files in listing.values() for f in files}
        hidden: set[str] = set()
        for _, journal in self.journals():
            outputs = [self.path(p) for p in journal["outputs"]]
            if all(p in present for p in outputs):
                hidden.update(self.path(p) for p in journal["sources"])
            else:
                hidden.update(outputs)
        return hidden

    # ---- locks -------------------------------------------------------------------------
    @contextmanager
    def lock(self, name: str, exclusive: bool) -> Iterator[None]:
        """An advisory lock: flock on <root>/_<name>.lock locally, a process lock elsewhere."""
        if not self.local:
            with _PROCESS_LOCKS.setdefault((self.url, name), threading.RLock()):
                yield
            return
        fd = os.open(self.path(f"_{name}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

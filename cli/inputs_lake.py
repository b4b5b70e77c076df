"""Checks of a ``--lake`` before anything starts (see :mod:`cli.inputs`).

:func:`lake_path` is cheap (the file system and the standard library's sqlite3, no DuckDB): a path
that is a regular file, a damaged catalog, a directory that holds something else, or a parent that
cannot be written is refused with one line that says what to do, before a Prefect server starts or
a lake is created. :func:`campaign_lake` opens an existing lake (DuckDB) to check that it was made
for the campaign's backend and that a resumed campaign matches what the lake recorded.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from cli.inputs import InputError

CATALOG_FILE = "catalog.sqlite"  # memory_lake.storage.CATALOG_FILE (kept here: no DuckDB import)
OLD_META_FILE = "lake.json"  # memory_lake.catalog.OLD_META_FILE: a format-1 lake
SQLITE_MAGIC = b"SQLite format 3\x00"
DUCKLAKE_TABLE = "ducklake_metadata"
# How long the check waits for a catalog another process holds locked. Reading its table list takes
# milliseconds and a WAL catalog's writers do not hold readers off, so a lock that does for this long is a
# process's that stopped mid-write (a campaign suspended with Ctrl-Z, or SIGSTOP): waiting longer would not
# end it, and a locked catalog is a database in use, not a damaged one.
LOCK_WAIT_S = 2.0


def directory_of(uri: str | os.PathLike) -> Path | None:
    """The directory of a directory lake (``runs/lake``, ``file:///x``); None for a ``ducklake:`` URI.
    A URI memory_lake does not accept gets memory_lake's own one-line error."""
    text = os.fspath(uri).strip()
    if not text:
        raise InputError("--lake: empty (a directory, or ducklake:postgres:<libpq conninfo>)")
    if text.startswith("ducklake:") or ("://" in text and not text.startswith("file://")):
        from memory_lake import LakeError
        from memory_lake.storage import parse

        try:
            parse(text)
        except LakeError as exc:
            raise InputError(f"--lake {exc}") from None
        return None
    return Path(text[len("file://"):] if text.startswith("file://") else text).expanduser()


def lake_path(uri: str | os.PathLike, must_exist: bool, flag: str = "--lake") -> Path | None:
    """Check a lake's path without opening it; returns the directory of a directory lake (None for a
    ``ducklake:`` URI, checked when opened). ``must_exist``: the command reads a lake that is there."""
    directory = directory_of(uri)
    if directory is None:
        return None
    if directory.exists() and not directory.is_dir():
        raise InputError(f"{flag} {directory}: is a file, not a lake; a lake is a directory (a new one, or one "
                         "holding catalog.sqlite) or a ducklake: URI")
    catalog = directory / CATALOG_FILE
    if catalog.exists():
        _check_catalog(catalog, flag)
        return directory
    if (directory / OLD_META_FILE).exists():
        raise InputError(f"{flag} {directory}: a lake of the old directory format; move it into a DuckLake lake "
                         f"with `evokernel lake migrate {directory} NEW`")
    if directory.is_dir() and any(directory.iterdir()):
        raise InputError(f"{flag} {directory}: a directory that is not empty and holds no lake (no {CATALOG_FILE}); "
                         "give a new or empty directory, or the directory of a lake")
    if must_exist:
        raise InputError(f"{flag} {directory}: no memory lake here (a campaign creates it, or `evokernel lake init "
                         f"--lake {directory} --backend NAME`)")
    _check_creatable(directory, flag)
    return directory


def _check_catalog(catalog: Path, flag: str) -> None:
    """The catalog is a SQLite database holding DuckLake's tables (stdlib sqlite3, read only)."""
    advice = "restore it from a backup, or give another --lake"
    if not catalog.is_file():
        raise InputError(f"{flag} {catalog}: not a file; the lake's catalog is damaged ({advice})")
    try:
        with catalog.open("rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise InputError(f"{flag} {catalog}: cannot read the lake's catalog ({exc.strerror or exc})") from None
    if head != SQLITE_MAGIC:
        what = "empty" if not head else "not a SQLite database"
        raise InputError(f"{flag} {catalog}: {what}; the lake's catalog is damaged ({advice})")
    try:
        db = sqlite3.connect(f"{catalog.resolve().as_uri()}?mode=ro", uri=True, timeout=LOCK_WAIT_S)
        try:
            found = db.execute("SELECT count(*) FROM sqlite_master WHERE name = ?", (DUCKLAKE_TABLE,)).fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error as exc:
        if _held_by_another_process(exc):  # a database in use (a campaign or a compaction writing it), not a
            return  # damaged one: the campaign's lease, or the lake's own open, says who holds it
        raise InputError(f"{flag} {catalog}: unreadable SQLite database ({exc}); the lake's catalog is damaged "
                         f"({advice})") from None
    if not found:
        raise InputError(f"{flag} {catalog}: a SQLite database without DuckLake's tables, not a lake's catalog "
                         f"({advice})")


def _held_by_another_process(exc: sqlite3.Error) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED (and their extended codes): "database is locked", which says the file is a
    SQLite database another connection is using."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _check_creatable(directory: Path, flag: str) -> None:
    ancestor = directory.absolute()
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InputError(f"{flag} {directory}: cannot be created: {ancestor} is a file")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {directory}: cannot be created: no write permission in {ancestor}")


def campaign_lake(uri: str, backend: str, campaign_id: str | None = None, build_hash: str = "", method: str = "",
                  model: str = "", flag: str = "--lake") -> None:
    """An existing lake must be of the campaign's backend, and a campaign it holds under ``campaign_id``
    must be resumable with these inputs (``build_hash``, ``method``, ``model``; checked when given).
    A new lake (nothing there yet) passes: the campaign creates it."""
    directory = lake_path(uri, must_exist=False, flag=flag)
    if directory is not None and not (directory / CATALOG_FILE).exists():
        return
    from memory_lake import Lake, LakeError

    try:
        if directory is None and not Lake.exists(uri):
            return
        with Lake.open(uri) as lake:
            state = lake.campaign_state(campaign_id) if campaign_id else None
            lake_backend, root = lake.backend, lake.location.label
    except LakeError as exc:
        raise InputError(f"{flag} {exc}") from None
    if lake_backend != backend:
        raise InputError(f"{flag} {root}: a lake for backend {lake_backend!r}, but the build is for {backend!r}; "
                         f"its memory (API templates, kernels) is {lake_backend}'s: give a {backend} lake or a new "
                         "--lake path")
    if state is None:
        return
    for field, want, option in (("build_hash", build_hash, "--build"), ("method", method, "--method"),
                                ("model", model, "--llm"), ("backend", backend, "--build")):
        if want and getattr(state, field) != want:
            raise InputError(f"--campaign-id {campaign_id}: the lake's campaign has {field}={getattr(state, field)!r}, "
                             f"these inputs give {want!r} ({option}); resume it with the same inputs or use a new "
                             "--campaign-id")


def known_campaigns(uri: str, campaign_ids: list[str], flag: str = "--campaign") -> None:
    """Each asked campaign id is one the lake knows (a typo would give an empty report without a word)."""
    if not campaign_ids:
        return
    from memory_lake import Lake, LakeError

    try:
        with Lake.open(uri) as lake:
            known = lake.query("SELECT campaign_id FROM campaigns UNION SELECT campaign_id FROM attempts").column(0)
            known = sorted(c for c in known.to_pylist() if c)
    except LakeError as exc:
        raise InputError(f"--lake {exc}") from None
    for campaign_id in campaign_ids:
        if campaign_id not in known:
            listed = ", ".join(known[-5:]) if known else "none"
            raise InputError(f"{flag} {campaign_id}: no such campaign in the lake {uri} (its campaigns: {listed}"
                             f"{'; `evokernel lake query` lists all' if len(known) > 5 else ''})")

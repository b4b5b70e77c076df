"""The DuckDB side of a lake: loading the DuckLake extensions from their PyPI wheels, attaching a
catalog (live or at a snapshot), S3 credentials from the environment, and transactions that are
retried when DuckLake reports a conflict or SQLite reports "database is locked".

Extensions cannot be downloaded at run time here; the ``duckdb-extension-*`` wheels ship them for
duckdb 1.5.5 and are loaded by file path. Every retried error is one that guarantees the
transaction did not commit (a DuckLake conflict is detected before the catalog commit; a busy
SQLite refuses the commit), so a retry never writes twice.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import random
import time
from functools import lru_cache
from typing import Callable, TypeVar
from urllib.parse import urlparse

import duckdb
import pyarrow as pa

from memory_lake.errors import LakeError

ALIAS = "lake"  # the attached lake's name on every connection: SELECT ... FROM lake.items
METADATA = f"__ducklake_metadata_{ALIAS}"  # the catalog database DuckLake attaches beside it
EXTENSIONS = {"ducklake": "ducklake", "sqlite": "sqlite_scanner", "postgres": "postgres_scanner",
              "httpfs": "httpfs"}
RETRY_MARKERS = ("transaction conflict", "database is locked", "could not serialize", "deadlock detected",
                 "conflict on")
# a statement that lost a race inside the catalog's own transaction (Postgres aborts it) says only
# this; retryable where the caller rolls the connection back first
ABORTED_MARKER = "current transaction is aborted"
MAX_ATTEMPTS = 200  # with the backoff capped at 0.5 s: about 100 s of contention before giving up
T = TypeVar("T")


@lru_cache(maxsize=None)
def extension_path(name: str) -> str:
    """The path of an extension inside its ``duckdb-extension-<name>`` wheel."""
    module = f"duckdb_extension_{name}"
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise LakeError(f"DuckDB extension {name!r} is not installed (pip install {module.replace('_', '-')}"
                        f"=={duckdb.__version__})")
    root = list(spec.submodule_search_locations)[0]
    found = glob.glob(os.path.join(root, "extensions", f"v{duckdb.__version__}", f"{name}.duckdb_extension"))
    if not found:
        raise LakeError(f"DuckDB extension {name!r}: no build for duckdb {duckdb.__version__} in {root}")
    return found[0]


def new_connection(needs: tuple[str, ...] = ("ducklake", "sqlite", "postgres", "httpfs"),
                   for_user_sql: bool = False) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the lake's extensions loaded and UTC timestamps.

    DuckDB checks an extension's signature on every LOAD by hashing the whole file: the four wheels' 126
    MB cost 0.55 s of CPU per connection, and a campaign, a report or a test opens hundreds. The files
    loaded here are those of the installed ``duckdb-extension-*`` wheels, found by the package's own
    code and as trusted as it, so a connection that runs only this package's SQL skips the check
    (``allow_unsigned_extensions``: 0.012 s). One that runs a user's SQL (``for_user_sql``: `lake
    query`) keeps it, so a statement on it could never load an unsigned file."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False,
                                 "allow_unsigned_extensions": not for_user_sql})
    for short in needs:
        con.execute(f"LOAD '{extension_path(EXTENSIONS[short])}'")
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    return con


def s3_settings() -> dict[str, str]:
    """S3 credentials and endpoint from the usual AWS environment variables (empty ones left out)."""
    env = os.environ
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or ""
    settings = {"KEY_ID": env.get("AWS_ACCESS_KEY_ID", ""), "SECRET": env.get("AWS_SECRET_ACCESS_KEY", ""),
                "SESSION_TOKEN": env.get("AWS_SESSION_TOKEN", ""),
                "REGION": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"}
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
        settings.update(ENDPOINT=parsed.netloc, USE_SSL="true" if parsed.scheme == "https" else "false",
                        URL_STYLE="path")
    return {k: v for k, v in settings.items() if v}


def install_s3_secret(con: duckdb.DuckDBPyConnection) -> None:
    options = ", ".join(f"{k} {literal(v)}" for k, v in s3_settings().items())
    con.execute(f"CREATE OR REPLACE SECRET evokernel_lake_s3 (TYPE s3{', ' + options if options else ''})")


def attach(con: duckdb.DuckDBPyConnection, catalog: str, data_path: str | None = None, create: bool = False,
           snapshot: int | None = None, snapshot_time: str | None = None, override_data_path: bool = False,
           read_only: bool = False) -> None:
    """ATTACH the lake as ``lake`` and make it the default catalog (plain table names resolve).
    ``override_data_path``: use ``data_path`` for this connection whatever the catalog records
    (a directory lake's own folder: see datapath.py). A snapshot is always read-only."""
    options = [] if create else ["CREATE_IF_NOT_EXISTS false"]
    if data_path:
        options.append(f"DATA_PATH {literal(data_path)}")
        if override_data_path and not create:
            options.append("OVERRIDE_DATA_PATH true")
    if snapshot is not None:
        options.append(f"SNAPSHOT_VERSION {int(snapshot)}")
    elif snapshot_time is not None:
        options.append(f"SNAPSHOT_TIME {literal(snapshot_time)}")
    if read_only or snapshot is not None or snapshot_time is not None:
        options.append("READ_ONLY")
    install_s3_secret(con)
    with_options = f" ({', '.join(options)})" if options else ""
    retrying(lambda: con.execute(f"ATTACH {literal(catalog)} AS {ALIAS}{with_options}"))
    con.execute(f"USE {ALIAS}")


def retryable(exc: BaseException, rolls_back: bool = False) -> bool:
    text = str(exc).lower()
    markers = RETRY_MARKERS + ((ABORTED_MARKER,) if rolls_back else ())
    return isinstance(exc, duckdb.Error) and any(marker in text for marker in markers)


def retrying(action: Callable[[], T], attempts: int = MAX_ATTEMPTS,
             con: duckdb.DuckDBPyConnection | None = None) -> T:
    """Run ``action``, again after a short jittered pause while it fails with a retryable error.

    With ``con``, a failed attempt's transaction is rolled back first: a DuckLake function that
    loses a commit race (``ducklake_flush_inlined_data`` against concurrent writers) leaves the
    connection's transaction aborted, and every later statement on it would fail.
    """
    for attempt in range(attempts):
        try:
            return action()
        except duckdb.Error as exc:
            if con is not None:
                _rollback(con)
            if not retryable(exc, rolls_back=con is not None) or attempt == attempts - 1:
                raise
            time.sleep(min(0.5, 0.005 * 2 ** min(attempt, 7)) * (0.5 + random.random()))
    raise AssertionError("unreachable")


def transaction(con: duckdb.DuckDBPyConnection, body: Callable[[duckdb.DuckDBPyConnection], T],
                attempts: int = MAX_ATTEMPTS) -> T:
    """BEGIN, ``body(con)``, COMMIT; the whole transaction again when the commit conflicts."""

    def once() -> T:
        con.execute("BEGIN TRANSACTION")
        try:
            result = body(con)
            con.execute("COMMIT")
            return result
        except BaseException:
            _rollback(con)
            raise

    return retrying(once, attempts)  # once() rolls back itself


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        pass  # a failed COMMIT has already ended the transaction


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def literal(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def read_retrying(action: Callable[[], T], con: duckdb.DuckDBPyConnection | None = None) -> T:
    """Run a read, retrying a busy catalog; a DuckDB error becomes a one-line LakeError."""
    try:
        return retrying(action, con=con)
    except duckdb.Error as exc:
        raise LakeError(f"query failed: {first_line(exc)}") from None


def arrow(con: duckdb.DuckDBPyConnection, sql_text: str, params) -> pa.Table:
    """A query's result as an Arrow table; a DuckDB error that is not retryable becomes a one-line LakeError."""
    try:
        relation = con.sql(sql_text, params=params)
        return relation.to_arrow_table() if relation is not None else pa.table({})
    except duckdb.Error as exc:
        if retryable(exc):
            raise
        raise LakeError(f"query failed: {first_line(exc)}") from None

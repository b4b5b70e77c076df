"""Where a lake lives: its URI, the DuckLake catalog it names and the data path of its Parquet files.

A lake is named by one string:

* a plain directory (``runs/lake``, ``/data/lake``, ``file:///data/lake``): the embedded default.
  The catalog is the SQLite database ``<dir>/catalog.sqlite`` (other processes on the machine
  read and write it while a campaign runs; a DuckDB-file catalog would admit one process), the
  data files go under ``<dir>/data/``. Created on first use; nothing to start.
* ``ducklake:postgres:<libpq conninfo>`` (e.g. ``ducklake:postgres:dbname=lake host=db port=5432``):
  a PostgreSQL catalog for many machines. Its data path is given once, at creation (a directory,
  a shared file system, or ``s3://bucket/prefix`` with endpoint and credentials from the usual
  AWS environment variables), and is kept in the catalog.
* ``ducklake:sqlite:<path of a catalog file>``: a SQLite catalog elsewhere (data path as above).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from memory_lake.errors import LakeError

CATALOG_FILE = "catalog.sqlite"
DATA_DIR = "data"
# The file whose presence marks a directory lake (evokernel's runtime checks it before creating).
META_FILE = CATALOG_FILE
DATA_PATH_ENV = "EVOKERNEL_LAKE_DATA_PATH"  # data path for a new catalog lake when none is given


@dataclass(frozen=True)
class Location:
    """A parsed lake URI: what to ATTACH, and where new data files go (None: the catalog knows)."""

    uri: str
    catalog: str  # the ATTACH string: ducklake:sqlite:... or ducklake:postgres:...
    kind: str  # directory | sqlite | postgres
    directory: Path | None = None  # directory lakes only

    @property
    def label(self) -> str:
        """The URI for messages, without a password."""
        return _redact(self.uri)

    def default_data_path(self) -> str | None:
        if self.directory is not None:
            return str(self.directory / DATA_DIR) + "/"
        found = os.environ.get(DATA_PATH_ENV)
        return found or None

    @property
    def sqlite_catalog(self) -> Path | None:
        """The catalog file of a SQLite-catalog lake (directory or ducklake:sqlite:), else None."""
        if self.kind in ("directory", "sqlite"):
            return Path(self.catalog[len("ducklake:sqlite:"):])
        return None

    def catalog_exists(self) -> bool | None:
        """For file catalogs, whether the catalog file exists (None: ask the server)."""
        return self.sqlite_catalog.is_file() if self.sqlite_catalog is not None else None


def parse(uri: str | os.PathLike) -> Location:
    """Parse a lake URI (see the module docstring); a bad one is a one-line LakeError."""
    text = os.fspath(uri).strip()
    if not text:
        raise LakeError("lake: empty lake URI")
    if text.startswith("ducklake:postgres:"):
        if not text[len("ducklake:postgres:"):].strip():
            raise LakeError(f"{text}: missing the libpq conninfo after ducklake:postgres:")
        return Location(uri=text, catalog=text, kind="postgres")
    if text.startswith("ducklake:sqlite:"):
        path = Path(text[len("ducklake:sqlite:"):]).expanduser().resolve()
        return Location(uri=text, catalog=f"ducklake:sqlite:{path}", kind="sqlite")
    if text.startswith("ducklake:"):
        raise LakeError(f"{text}: unsupported catalog (use a directory, ducklake:postgres:<conninfo> "
                        "or ducklake:sqlite:<file>)")
    if "://" in text and not text.startswith("file://"):
        raise LakeError(f"{text}: a lake is a directory or a ducklake: URI; put data on S3 with "
                        "--data-path s3://... and a ducklake:postgres: catalog")
    directory = Path(text[len("file://"):] if text.startswith("file://") else text).expanduser().resolve()
    return Location(uri=text, catalog=f"ducklake:sqlite:{directory / CATALOG_FILE}", kind="directory",
                    directory=directory)


def normalise_data_path(data_path: str) -> str:
    """A data path as DuckLake wants it: absolute for local paths, ending in '/'."""
    text = str(data_path).strip()
    if "://" not in text:
        text = str(Path(text).expanduser().resolve())
    return text if text.endswith("/") else text + "/"


def _redact(uri: str) -> str:
    parts = []
    for word in uri.split(" "):
        key = word.split("=", 1)[0]
        parts.append(f"{key}=***" if key.endswith("password") and "=" in word else word)
    return " ".join(parts)

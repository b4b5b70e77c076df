"""Fixtures for memory_lake tests: real lakes of every catalog kind, in temp dirs.

Every test that takes ``lake`` or ``lake_factory`` runs once per kind: ``directory`` (the
embedded default: a SQLite catalog in the directory, data beside it), ``postgres`` (a
``ducklake:postgres:`` catalog on a PostgreSQL server started for the session, data in a local
directory) and ``s3`` (the same PostgreSQL catalog, data on moto's S3 server on loopback).
"""

from __future__ import annotations

import itertools
import os
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/services.py

from services import start_postgres, start_s3  # noqa: E402

from memory_lake import Lake, NewItem, SeedItemRow  # noqa: E402
from memory_lake.storage import DATA_PATH_ENV  # noqa: E402

KINDS = ("directory", "postgres", "s3")
CATALOG_KINDS = ("directory", "postgres")  # the multi-process durability tests (data path: local)
SEEDS = (
    SeedItemRow("cpu backend API notes", "Use OpenMP parallel for loops; mark pointers restrict.", "", "general"),
    SeedItemRow("cpu worked example: relu", "An elementwise relu kernel in C.",
                "for (long i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0;", "activation"),
)


def sample_items(count: int, backend: str = "cpu") -> list[NewItem]:
    cats = ("activation", "matmul", "reduction", "conv")
    return [NewItem(kind=("experience", "trace", "best_practice")[i % 3], backend=backend,
                    title=f"{cats[i % 4]} note {i}", body=f"{cats[i % 4]} kernel: tile size {16 * (i % 5 + 1)} "
                    f"vectorize inner loop {i}", task_id=f"L1_{i % 7}", category=cats[i % 4]) for i in range(count)]


class LakeFactory:
    """New lake URIs of one catalog kind; a catalog lake's data path goes to EVOKERNEL_LAKE_DATA_PATH
    (what ``Lake.create`` reads when no data path is passed), fresh for every lake."""

    def __init__(self, kind: str, base: Path, postgres=None, s3=None) -> None:
        self.kind, self.base, self.postgres, self.s3 = kind, base, postgres, s3
        self._count = itertools.count()

    def new(self) -> str:
        name = f"lake-{next(self._count)}"
        if self.kind == "directory":
            return str(self.base / name)
        if self.kind == "s3":
            os.environ[DATA_PATH_ENV] = f"s3://{self.s3.bucket}/{uuid.uuid4().hex}/"
        else:
            os.environ[DATA_PATH_ENV] = str(self.base / f"{name}-data")
        return "ducklake:postgres:" + self.postgres.conninfo(self.postgres.new_database())


@pytest.fixture(scope="session")
def postgres_server():
    server = start_postgres()
    if server is None:
        pytest.skip("PostgreSQL is not installed (scripts/run_tests.sh installs Debian's package)")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def s3_server():
    server = start_s3()
    saved = {k: os.environ.get(k) for k in server.env()}
    os.environ.update(server.env())
    yield server
    for key, value in saved.items():
        os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
    server.stop()


def _factory(request, tmp_path_factory) -> LakeFactory:
    kind = request.param
    postgres = request.getfixturevalue("postgres_server") if kind != "directory" else None
    s3 = request.getfixturevalue("s3_server") if kind == "s3" else None
    return LakeFactory(kind, tmp_path_factory.mktemp(f"lakes-{kind}"), postgres, s3)


@pytest.fixture(scope="session", params=KINDS)
def lake_factory(request, tmp_path_factory) -> LakeFactory:
    return _factory(request, tmp_path_factory)


@pytest.fixture(scope="session", params=CATALOG_KINDS)
def catalog_factory(request, tmp_path_factory) -> LakeFactory:
    return _factory(request, tmp_path_factory)


@pytest.fixture
def lake(lake_factory) -> Lake:
    with Lake.create(lake_factory.new(), "cpu", SEEDS) as created:
        yield created


@pytest.fixture
def catalog_lake(catalog_factory) -> Lake:
    with Lake.create(catalog_factory.new(), "cpu", SEEDS) as created:
        yield created

"""Fixtures for memory_lake tests (helpers live in lake_fixtures.py)."""

from lake_fixtures import (catalog_factory, catalog_lake, lake, lake_factory, postgres_server,  # noqa: F401
                           s3_server)  # (re-exported fixtures)

"""Fixtures for memory_lake tests (helpers live in lake_fixtures.py)."""

from lake_fixtures import lake, lake_factory, postgres_server, s3_server  # noqa: F401  (re-exported fixtures)

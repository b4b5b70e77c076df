"""Fixtures for memory_lake tests (helpers live in lake_fixtures.py)."""

from lake_fixtures import lake  # noqa: F401  (re-exported fixture)

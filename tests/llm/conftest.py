"""Fixtures for the LLM tests: a fake API server and a retry sleep that records instead of sleeping."""

from __future__ import annotations

import pytest

from fake_server import FakeLLMServer  # tests/llm is on sys.path (pytest rootdir-less import)


@pytest.fixture
def fake_api():
    with FakeLLMServer() as server:
        yield server


class RecordingSleep:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def no_sleep():
    return RecordingSleep()

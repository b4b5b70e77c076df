"""Fixtures for the LLM tests: a fake API server, a retry sleep that records instead of sleeping, and
the openai and anthropic providers built against the fake server."""

from __future__ import annotations

import pytest

from evokernel.config import Settings
from evokernel.llm import make_llm
from fake_server import API_KEY, FakeLLMServer  # tests/llm is on sys.path (pytest rootdir-less import)


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


@pytest.fixture(params=["openai", "anthropic"])
def provider(request, fake_api, monkeypatch, no_sleep):
    """(make, fake_api, sleep): ``make(**settings)`` builds the provider against the fake server."""
    if request.param == "openai":
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", fake_api.url + "/v1")
        spec = "openai:gpt-4o"
    else:
        monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.url)
        spec = "anthropic:claude-opus-4-5-20251101"

    def make(timeout_s: float = 5.0, max_retries: int = 3, budget_s: float = 60.0):
        settings = Settings(llm_max_retries=max_retries, llm_retry_budget_s=budget_s)
        return make_llm(spec, settings, timeout_s=timeout_s, sleep=no_sleep)

    return make, fake_api, no_sleep

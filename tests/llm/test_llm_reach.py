"""The endpoint check a campaign runs before it starts anything (evokernel/llm/reach.py, issue 39):
the real providers' HTTP clients against the fake API server on loopback, and a port nothing listens on."""

from __future__ import annotations

import socket

from fake_server import API_KEY

from evokernel.llm import make_llm
from evokernel.llm.reach import endpoint_problem


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_endpoint_that_answers_is_fine_and_no_generation_is_asked(fake_api, monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", API_KEY)
    assert endpoint_problem(make_llm(f"openai-compatible:m@{fake_api.url}/v1")) == ""
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.url)
    assert endpoint_problem(make_llm("anthropic:claude-haiku-4-5")) == ""
    assert fake_api.probes == ["/v1/models", "/v1/models"] and fake_api.requests == []


def test_an_unreachable_endpoint_is_named(monkeypatch):
    port = _closed_port()
    problem = endpoint_problem(make_llm(f"openai-compatible:m@http://127.0.0.1:{port}/v1"))
    assert problem.startswith(f"connection failed to http://127.0.0.1:{port}/v1: ") and "refused" in problem


def test_a_refused_key_names_its_variable(fake_api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_api.url + "/v1")
    assert endpoint_problem(make_llm("openai:gpt-4o-mini")) == (
        f"authentication failed (HTTP 401) at {fake_api.url}/v1: check OPENAI_API_KEY")


def test_a_provider_without_an_endpoint_is_not_probed():
    assert endpoint_problem(make_llm("scripted:demo")) == ""

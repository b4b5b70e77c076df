"""`evokernel llm check` and `evokernel llm prices` through the real CLI app."""

from __future__ import annotations

import json

from fake_server import API_KEY, Answer
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()


def test_check_against_the_fake_openai_api(fake_api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_api.url + "/v1")
    fake_api.push(Answer(text="ready"))
    result = runner.invoke(app, ["llm", "check", "--llm", "openai:gpt-4o-mini"])
    assert result.exit_code == 0, result.output
    assert "tokens: 11 in, 7 out" in result.output and "text: ready" in result.output
    assert "cost: $0.000006" in result.output  # 11 * 0.15/1e6 + 7 * 0.60/1e6


def test_check_with_a_scripted_file_says_the_tokens_are_estimated(tmp_path):
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"label": "t", "responses": {"*": {"draft": ["hello there"]}}}))
    result = runner.invoke(app, ["llm", "check", "--llm", f"scripted:{script}"])
    assert result.exit_code == 0, result.output
    assert "(estimated)" in result.output and "cost: $0.000000" in result.output


def test_check_an_unpriced_model_says_so(fake_api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_api.url + "/v1")
    result = runner.invoke(app, ["llm", "check", "--llm", "openai:gpt-9-experimental"])
    assert result.exit_code == 0 and "model not in the price table" in result.output


def test_check_errors_are_one_line_with_exit_code_2(fake_api, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = runner.invoke(app, ["llm", "check", "--llm", "anthropic:claude-haiku-4-5"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: --llm anthropic:claude-haiku-4-5: environment variable ANTHROPIC_API_KEY is not set (the API key)"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "wrong")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.url)
    result = runner.invoke(app, ["llm", "check", "--llm", "anthropic:claude-haiku-4-5"])
    assert result.exit_code == 2 and "authentication failed (HTTP 401)" in result.output


def test_prices_shows_overrides(monkeypatch):
    monkeypatch.setenv("LLM_PRICES", '{"my-local-model": [0.1, 0.2]}')
    result = runner.invoke(app, ["llm", "prices"])
    assert result.exit_code == 0 and "my-local-model" in result.output and "gpt-4o" in result.output
    monkeypatch.setenv("LLM_PRICES", "{bad")
    result = runner.invoke(app, ["llm", "prices"])
    assert result.exit_code == 2 and "LLM_PRICES: invalid JSON" in result.output
